# cmake -DIN=FILE -DOUT=HEADER -DNAME=IDENT -P embed.cmake
# Writes FILE's bytes as a C array.  Not bin2c: its --alignment output is not valid C,
# and cuModuleLoadData needs the fatbin header aligned.
file(READ ${IN} hex HEX)
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
string(REGEX REPLACE "(0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,)" "\\1\n"
  bytes "${bytes}")
file(WRITE ${OUT} "static _Alignas(16) const unsigned char ${NAME}[] = {\n${bytes}};\n")
