/* backoff.c - capped exponential backoff with full jitter.
 *
 * Semantics follow the seed's calculate_next_attempt():
 *   capped = min(base * 2^attempt_count, max); delay = uniform(0, capped)
 * with integer milliseconds instead of float seconds. */
#include "backoff.h"

#include <errno.h>
#include <stddef.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

int64_t backoff_cap_ms(uint32_t attempt_count, int64_t base_ms, int64_t max_ms)
{
    /* Negative configuration values are nonsense for a delay; clamping them
     * to 0 keeps the result inside [0, max] for every input. */
    if (max_ms <= 0 || base_ms <= 0)
        return 0;
    if (base_ms >= max_ms || attempt_count >= 63)
        return max_ms;
    /* base * 2^n <= max  <=>  base <= floor(max / 2^n): exact, and the shift
     * below can then not overflow because the product is <= max. */
    if (base_ms > (max_ms >> attempt_count))
        return max_ms;
    return base_ms << attempt_count;
}

/* High 64 bits of a 64x64 product. */
static uint64_t mulhi64(uint64_t a, uint64_t b)
{
#ifdef __SIZEOF_INT128__
    return (uint64_t)(((unsigned __int128)a * b) >> 64);
#else
    uint64_t a_lo = a & 0xffffffffu, a_hi = a >> 32;
    uint64_t b_lo = b & 0xffffffffu, b_hi = b >> 32;
    uint64_t ll = a_lo * b_lo, lh = a_lo * b_hi, hl = a_hi * b_lo, hh = a_hi * b_hi;
    uint64_t mid = (ll >> 32) + (lh & 0xffffffffu) + (hl & 0xffffffffu);
    return hh + (lh >> 32) + (hl >> 32) + (mid >> 32);
#endif
}

int64_t backoff_delay_ms(uint32_t attempt_count, int64_t base_ms,
                         int64_t max_ms, uint64_t rnd)
{
    int64_t cap = backoff_cap_ms(attempt_count, base_ms, max_ms);
    /* Multiply-shift (Lemire) maps rnd onto [0, cap] monotonically:
     * rnd = 0 -> 0, rnd = UINT64_MAX -> cap. Unlike rnd % (cap + 1) it has
     * no low-bit preference; the residual non-uniformity is at most
     * (cap + 1) / 2^64 per value, i.e. < 2^-40 for caps below ~2^24 s,
     * far below anything a retry schedule can notice. cap <= INT64_MAX so
     * cap + 1 fits in uint64_t. */
    return (int64_t)mulhi64(rnd, (uint64_t)cap + 1);
}

/* ---- per-thread generator: xoshiro256** seeded via splitmix64 ----
 * Per-thread state needs no locking. A child of fork() inherits the forking
 * thread's state and would repeat its parent's jitter; hookd uses threads,
 * not forked workers, so that is accepted rather than paying a getpid()
 * per draw. */

static _Thread_local uint64_t rng_s[4];
static _Thread_local int rng_seeded;

static uint64_t splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15u);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}

static uint64_t rotl(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

static int seed_from_getrandom(uint64_t *out, size_t len)
{
    unsigned char *p = (unsigned char *)out;
    size_t got = 0;
    while (got < len) {
        ssize_t r = getrandom(p + got, len - got, 0);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        got += (size_t)r;
    }
    return 0;
}

static void rng_seed(void)
{
    uint64_t seed[4];
    if (seed_from_getrandom(seed, sizeof seed) != 0) {
        /* No getrandom (old kernel, seccomp): jitter only has to differ
         * between threads and processes, not resist prediction, so mix the
         * clocks, pid and this thread's TLS address through splitmix64. */
        struct timespec rt = {0, 0}, mono = {0, 0};
        clock_gettime(CLOCK_REALTIME, &rt);
        clock_gettime(CLOCK_MONOTONIC, &mono);
        uint64_t x = (uint64_t)rt.tv_sec * 1000000007u ^ (uint64_t)rt.tv_nsec;
        x ^= ((uint64_t)mono.tv_sec << 32) ^ (uint64_t)mono.tv_nsec;
        x ^= (uint64_t)getpid() << 17;
        x ^= (uint64_t)(uintptr_t)&rng_s;
        for (int i = 0; i < 4; i++)
            seed[i] = splitmix64(&x);
    } else {
        /* Pass raw entropy through splitmix64 anyway: it guarantees a state
         * that is not all zero (the one fixed point of xoshiro). */
        uint64_t x = seed[0] ^ seed[1] ^ seed[2] ^ seed[3];
        for (int i = 0; i < 4; i++)
            seed[i] ^= splitmix64(&x);
    }
    if ((seed[0] | seed[1] | seed[2] | seed[3]) == 0)
        seed[0] = 0x9e3779b97f4a7c15u;
    memcpy(rng_s, seed, sizeof rng_s);
    rng_seeded = 1;
}

uint64_t backoff_rand64(void)
{
    if (!rng_seeded)
        rng_seed();
    const uint64_t result = rotl(rng_s[1] * 5, 7) * 9;
    const uint64_t t = rng_s[1] << 17;
    rng_s[2] ^= rng_s[0];
    rng_s[3] ^= rng_s[1];
    rng_s[1] ^= rng_s[2];
    rng_s[0] ^= rng_s[3];
    rng_s[2] ^= t;
    rng_s[3] = rotl(rng_s[3], 45);
    return result;
}
