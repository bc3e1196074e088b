// A resident control kernel (docs/design.md, "Gates and progress stamps"): one thread,
// launched once on a stream of its own, that copies a gate word the host writes (in
// page-locked memory the device maps) into a word in device memory, where streams wait on
// it (cuStreamWaitValue32).  The point of the relay is where the waiting streams poll: a
// wait on host memory reads across PCIe every time the front end looks, a wait on device
// memory reads the GPU's own memory, and only this kernel crosses the bus.  DS_RCK_QUIT in
// the host word ends the kernel, leaving the device word as it was.  Only gatemodes.cu
// uses it: measured there (lab/gpu-runs.md, runs 97 and 98), a resident kernel in an
// executor's context would hang a tenant's module loading under lazy loading, so the
// server keeps host gates and has no resident kernel.
#pragma once

#define DS_RCK_QUIT 0xffffffffu

__global__ void ds_rck_relay(const volatile unsigned *host_word, volatile unsigned *dev_word)
{
    unsigned last = *dev_word;

    for (;;) {
        unsigned v = *host_word;

        if (v == DS_RCK_QUIT)
            return;
        if (v != last) {
            *dev_word = v;
            __threadfence();
            last = v;
        }
    }
}
