# Sourced by bench/eval's scripts: sets $python to an interpreter that imports numpy
# (PYTHON if given; else python3, or the system's /usr/bin/python3 where python3 is
# another one, say pyenv's, without numpy).
python=${PYTHON:-}
if [ -z "$python" ]; then
    for p in python3 /usr/bin/python3; do
        if "$p" -c 'import numpy' 2> /dev/null; then python=$p; break; fi
    done
fi
if [ -z "$python" ]; then
    echo "bench/eval: no python3 with numpy (apt-get install python3-numpy, or set PYTHON)" >&2
    exit 1
fi
