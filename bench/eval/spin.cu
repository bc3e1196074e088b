// The kernel of latflood.c: every block spins for NS nanoseconds of the GPU's global
// timer, so that on a GPU a kernel's length is set by its grid (blocks x NS over the
// blocks the GPU holds at once) rather than by arithmetic whose speed varies with
// clocks.  On the sim a kernel computes nothing and its time comes from its grid alone.
extern "C" __global__ void spin(unsigned long long ns)
{
    unsigned long long t0, t;

    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
    do
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    while (t - t0 < ns);
}
