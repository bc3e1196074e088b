// This plugin's life beside the kubelet: serve the DevicePlugin service on our socket in
// the kubelet's device-plugins directory, register it on kubelet.sock, and do both again
// whenever the kubelet comes back (it recreates kubelet.sock and removes every other
// socket there when it restarts), until SIGTERM or SIGINT.
#ifndef DSK_REGISTRAR_H
#define DSK_REGISTRAR_H

#include "allocations.h"
#include "devices.h"
#include "options.h"

namespace dsk {

// Returns 0 on SIGTERM/SIGINT, 1 when the directory cannot be watched or the socket
// cannot be served at all (logged).
int serve_and_register(const Options &o, Devices &d, Allocations &a);

} // namespace dsk

#endif
