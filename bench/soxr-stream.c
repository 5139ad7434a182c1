/*
 * libsoxr at its own speed, for bench/soxr.bench.ts: one continuous stream of 80 ms chunks
 * (no flush, no clear), soxr_create at SOXR_HQ, one thread, float32 mono in and out; the time is
 * this process's CPU time (CLOCK_PROCESS_CPUTIME_ID) around the measured stretch only.
 *
 * Usage: soxr-stream FROM TO INPUT.f32 WARM_S MEASURE_S
 *   INPUT.f32: raw float32 mono at FROM Hz, looped; WARM_S seconds of audio are streamed first
 *   (untimed: tables, caches), then MEASURE_S seconds are timed. Prints one JSON line.
 *
 * libsoxr-dev is not needed: the few prototypes soxr.h declares are repeated here (soxr 0.1.x
 * ABI) and the library is linked by its soname: gcc -O2 soxr-stream.c -l:libsoxr.so.0.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

typedef struct soxr *soxr_t;
typedef const char *soxr_error_t;
typedef struct {
  double precision, phase_response, passband_end, stopband_begin;
  void *e;
  unsigned long flags;
} soxr_quality_spec_t;
typedef struct {
  unsigned log2_min_dft_size, log2_large_dft_size, coef_size_kbytes, num_threads;
  void *e;
  unsigned long flags;
} soxr_runtime_spec_t;
soxr_quality_spec_t soxr_quality_spec(unsigned long recipe, unsigned long flags);
soxr_runtime_spec_t soxr_runtime_spec(unsigned num_threads);
soxr_t soxr_create(double in_rate, double out_rate, unsigned num_channels, soxr_error_t *err, const void *io_spec,
                   const soxr_quality_spec_t *q_spec, const soxr_runtime_spec_t *runtime_spec);
soxr_error_t soxr_process(soxr_t, const void *in, size_t ilen, size_t *idone, void *out, size_t olen, size_t *odone);
const char *soxr_engine(soxr_t);
void soxr_delete(soxr_t);

#define SOXR_HQ 4 /* SOXR_20_BITS */

static double cpu_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static float *in;
static size_t in_len, in_at;
static float *out;
static size_t out_cap, produced;

/* Streams `seconds` of audio (whole 80 ms chunks, looping the input) through `s`. */
static void stream(soxr_t s, size_t chunk, double seconds, double rate) {
  size_t chunks = (size_t)(seconds * rate / chunk + 0.5);
  for (size_t c = 0; c < chunks; c++) {
    size_t n = chunk;
    if (in_at + n > in_len) in_at = 0;
    const float *p = in + in_at;
    in_at += n;
    while (n > 0) {
      size_t idone = 0, odone = 0;
      soxr_error_t e = soxr_process(s, p, n, &idone, out, out_cap, &odone);
      if (e) {
        fprintf(stderr, "soxr_process: %s\n", e);
        exit(1);
      }
      p += idone;
      n -= idone;
      produced += odone;
    }
  }
}

int main(int argc, char **argv) {
  if (argc != 6) {
    fprintf(stderr, "usage: %s FROM TO INPUT.f32 WARM_S MEASURE_S\n", argv[0]);
    return 2;
  }
  double from = atof(argv[1]), to = atof(argv[2]), warm = atof(argv[4]), measure = atof(argv[5]);
  FILE *f = fopen(argv[3], "rb");
  if (!f) {
    perror(argv[3]);
    return 1;
  }
  fseek(f, 0, SEEK_END);
  in_len = (size_t)ftell(f) / sizeof(float);
  fseek(f, 0, SEEK_SET);
  in = malloc(in_len * sizeof(float));
  if (fread(in, sizeof(float), in_len, f) != in_len) return 1;
  fclose(f);
  size_t chunk = (size_t)(from * 0.08 + 0.5);
  if (in_len < chunk) return 1;
  out_cap = (size_t)(chunk * to / from) + 4096;
  out = malloc(out_cap * sizeof(float));

  soxr_error_t err = NULL;
  soxr_quality_spec_t q = soxr_quality_spec(SOXR_HQ, 0);
  soxr_runtime_spec_t r = soxr_runtime_spec(1);
  soxr_t s = soxr_create(from, to, 1, &err, NULL, &q, &r);
  if (err || !s) {
    fprintf(stderr, "soxr_create: %s\n", err ? err : "null");
    return 1;
  }
  double w0 = cpu_ms();
  stream(s, chunk, warm, from);
  double w1 = cpu_ms();
  size_t before = produced;
  double t0 = cpu_ms();
  stream(s, chunk, measure, from);
  double t1 = cpu_ms();
  printf("{\"cpuMs\":%.4f,\"warmCpuMs\":%.4f,\"audioS\":%.3f,\"outSamples\":%zu,\"engine\":\"%s\"}\n", t1 - t0, w1 - w0, measure, produced - before, soxr_engine(s));
  soxr_delete(s);
  return 0;
}
