// The device plugin's log: one line per event on stderr, as the kubelet's other plugins
// write theirs (the DaemonSet's container log keeps it).
#ifndef DSK_LOG_H
#define DSK_LOG_H

#include <string>

namespace dsk {

void info(const std::string &msg);
void warn(const std::string &msg);
void error(const std::string &msg);

} // namespace dsk

#endif
