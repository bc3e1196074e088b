// The empty kernel of driver_bench.c: a launch that does no work, so that what is timed
// is the cost of launching.
extern "C" __global__ void empty(void) {}
