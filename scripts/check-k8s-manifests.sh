#!/usr/bin/env bash
# Checks deploy/kubernetes: every kustomization renders (`kubectl kustomize`, or
# `kustomize build`), and what it renders validates against Kubernetes' schemas in
# strict mode (kubernetes-validate, pinned in scripts/install-deps.sh: the base, the
# overlay and the examples against 1.30 and 1.37, the DRA example against 1.34, the
# first release with resource.k8s.io/v1, and 1.37), passes yamllint and
# scripts/check-k8s-refs.py; the sources pass yamllint and the node scripts shellcheck.
# The ServiceMonitor (a Prometheus Operator CRD) has no schema there: only
# check-k8s-refs.py checks it.  Exits 77 (skipped) when a tool is missing.
# usage: check-k8s-manifests.sh [SOURCE_DIR]
set -euo pipefail
src=$(cd "${1:-$(dirname "$0")/..}" && pwd)
k8s=$src/deploy/kubernetes
venv=${DETSHARE_TOOLS:-/opt/detshare-tools}
PATH=$PATH:$venv/bin
tmp=$(mktemp -d /tmp/ds-k8scheck.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

# Debian's kubernetes-client (1.20) carries kustomize 2, which knows neither `labels`
# nor generators' `envs`: kustomize 4 or later is needed.
render=
if command -v kubectl >/dev/null &&
    kubectl version --client 2>/dev/null | grep -Eq 'Kustomize Version: v([4-9]|[1-9][0-9])'; then
    render="kubectl kustomize"
elif command -v kustomize >/dev/null &&
    kustomize version 2>/dev/null | grep -Eq '(^|v)([4-9]|[1-9][0-9])\.'; then
    render="kustomize build"
fi
missing=()
[ -n "$render" ] || missing+=("kubectl (with kustomize 4 or later) or kustomize")
for t in kubernetes-validate yamllint shellcheck; do
    command -v "$t" >/dev/null || missing+=("$t")
done
python3 -c 'import yaml' 2>/dev/null || missing+=("python3-yaml")
if [ ${#missing[@]} -gt 0 ]; then
    echo "skipped: missing ${missing[*]} (scripts/install-deps.sh installs them)"
    exit 77
fi

failed=0
fail() { echo "FAIL: $*"; failed=1; }

yamllint -s -c "$k8s/.yamllint" "$k8s" || fail "yamllint of deploy/kubernetes"
shellcheck "$k8s"/base/node/*.sh || fail "shellcheck of the node scripts"

# kubernetes-validate says WARN, and exits 0, for a kind it has no schema for.
validate() {
    local out=$1 v=$2 log
    log=$(kubernetes-validate --strict --quiet -k "$v" "$out" 2>&1) || {
        echo "$log"
        fail "$out against Kubernetes $v"
        return
    }
    if echo "$log" | grep -v 'schema for kind ServiceMonitor with api version monitoring.coreos.com/v1' |
        grep -q .; then
        echo "$log"
        fail "$out against Kubernetes $v: an object without a schema"
    fi
}
for k in base:1.30.0,1.37.0 overlays/servicemonitor:1.30.0,1.37.0 \
    examples:1.30.0,1.37.0 examples/dra:1.34.0,1.37.0; do
    dir=${k%%:*}
    out=$tmp/$(echo "$dir" | tr / -).yaml
    if ! $render "$k8s/$dir" >"$out"; then
        fail "rendering deploy/kubernetes/$dir"
        continue
    fi
    for v in $(echo "${k#*:}" | tr , ' '); do validate "$out" "$v"; done
    yamllint -s -c "$k8s/.yamllint" "$out" || fail "yamllint of the rendered $dir"
    python3 "$src/scripts/check-k8s-refs.py" "$out" || fail "references in the rendered $dir"
done
[ "$failed" -eq 0 ] || exit 1
echo "ok: deploy/kubernetes renders, validates (strict), lints"
