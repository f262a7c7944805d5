#ifndef TFRECNP_MAPGUARD_H
#define TFRECNP_MAPGUARD_H
/* Copies out of a memory map that survive the file being cut under them.

   Reading a page of a mapped file past its end (the file was truncated after it was mapped)
   raises SIGBUS, which ends the process. A guarded copy marks, for its own thread, the bytes
   it reads; our SIGBUS handler jumps back out of a fault inside them, and the copy reports
   the run it was in. A fault anywhere else is not ours: the handler puts back the handler it
   found (faulthandler's, PyTorch's, a sanitizer's, or the default) and returns, so the
   faulting access runs again and meets that handler exactly as if we had never been there.
   The handler is (re)installed on top by each guarded copy, one sigaction call per copy of a
   block, so a library that installed its own since still sees every fault that is not ours.

   Thread state is initial-exec TLS: the handler reads it without calling into the dynamic
   loader, which is not async-signal-safe. */
#include <setjmp.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "bigcopy.h"

#define TFRECNP_TLS __thread __attribute__((tls_model("initial-exec")))

static TFRECNP_TLS sigjmp_buf *tfrecnp_guard_jump;
static TFRECNP_TLS const uint8_t *tfrecnp_guard_lo;
static TFRECNP_TLS const uint8_t *tfrecnp_guard_hi;
static struct sigaction tfrecnp_guard_before;

static void tfrecnp_guard_handler(int sig, siginfo_t *info, void *context) {
    const uint8_t *at = (const uint8_t *)info->si_addr;
    (void)context;
    if (tfrecnp_guard_jump != NULL && info->si_code > 0 && at >= tfrecnp_guard_lo &&
        at < tfrecnp_guard_hi) {
        siglongjmp(*tfrecnp_guard_jump, 1);
    }
    /* Not ours: the handler found before us takes over. A fault re-runs its access on
       return; a signal sent by kill/raise (si_code <= 0) is sent again. */
    sigaction(sig, &tfrecnp_guard_before, NULL);
    if (info->si_code <= 0) raise(sig);
}

/* Puts our handler on top when it is not (a cheap check, one call when it is). */
static inline int tfrecnp_guard_install(void) {
    struct sigaction now, ours;
    if (sigaction(SIGBUS, NULL, &now) != 0) return -1;
    if ((now.sa_flags & SA_SIGINFO) && now.sa_sigaction == tfrecnp_guard_handler) return 0;
    memset(&ours, 0, sizeof ours);
    ours.sa_sigaction = tfrecnp_guard_handler;
    ours.sa_flags = SA_SIGINFO | SA_NODEFER | SA_ONSTACK;
    sigemptyset(&ours.sa_mask);
    tfrecnp_guard_before = now;
    return sigaction(SIGBUS, &ours, NULL);
}

/* Copies src[starts[i] : starts[i] + sizes[i]] for i = 0..n-1 one after another into dst.
   Returns -1 when every run was copied, else the run whose bytes faulted (the mapped file
   no longer holds them), or -2 when the handler could not be installed. Bounds are the
   caller's to check. */
static inline int64_t tfrecnp_guarded_runs(const uint8_t *src, size_t src_len,
                                           const int64_t *starts, const int64_t *sizes,
                                           int64_t n, uint8_t *dst) {
    sigjmp_buf jump;
    volatile int64_t i = 0;
    volatile size_t done = 0;
    if (tfrecnp_guard_install() != 0) return -2;
    tfrecnp_guard_lo = src;
    tfrecnp_guard_hi = src + src_len;
    if (sigsetjmp(jump, 1) != 0) {
        tfrecnp_guard_jump = NULL;
        return i;
    }
    tfrecnp_guard_jump = &jump;
    for (; i < n; i++) {
        tfrecnp_bigcopy(dst + done, src + starts[i], (size_t)sizes[i]);
        done += (size_t)sizes[i];
    }
    tfrecnp_guard_jump = NULL;
    return -1;
}
#endif
