// What a thread calls after igzip's code, which compresses and inflates with vector instructions.
#ifndef PINWHEEL_VECTOR_STATE_H
#define PINWHEEL_VECTOR_STATE_H

#if defined(__x86_64__)
#include <immintrin.h>

// igzip's AVX2 and AVX-512 code returns without vzeroupper. Left dirty, the upper halves of the
// vector registers slow every SSE instruction the thread runs next (Swift's doubles among them) and
// can keep the core at its AVX-512 clock: without this, libm went from 1 % to 8 % of a loaded
// server's samples (docs/libwebsockets.md).
__attribute__((target("avx"))) static inline void clear_upper_vector_state(void) { _mm256_zeroupper(); }

static inline void after_vector_code(void) {
    if (__builtin_cpu_supports("avx")) clear_upper_vector_state();
}
#else
static inline void after_vector_code(void) {}
#endif

#endif
