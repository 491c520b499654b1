#include <stddef.h>
#include <stdint.h>

typedef struct ms_conv ms_conv;
typedef struct ms_pool ms_pool;

int ms_dnnl_open(const char *path, char *err, int errlen);
void ms_dnnl_version(int *major, int *minor, int *patch);
int ms_dnnl_isa(void);

/* p: N, C, H, W, O, KH, KW, SH, SW, DH, DW, PT, PL, PB, PR, OH, OW (NHWC
   input, HWIO filter, NHWC output; dilations as TF's, 1 = none). */
int ms_conv_create(const int64_t *p, int bias, int relu, ms_conv **out, char *err, int errlen);
size_t ms_conv_work_size(ms_conv *c);
int ms_conv_run(ms_conv *c, const float *src, const float *wei, const float *bias, float *dst, void *work, char *err, int errlen);
void ms_conv_free(ms_conv *c);

/* p: N, C, H, W, OH, OW, KH, KW, SH, SW, PT, PL, PB, PR (NHWC in and out);
   average pooling excludes the padding, as TF's. */
int ms_pool_create(const int64_t *p, int is_max, ms_pool **out, char *err, int errlen);
size_t ms_pool_work_size(ms_pool *c);
int ms_pool_run(ms_pool *c, const float *src, float *dst, void *work, char *err, int errlen);
void ms_pool_free(ms_pool *c);
