/* sgemm GFLOP/s of one cblas library, the numbers in kernels/cpu/blas/doc.go:
 *   cc -O2 -o build/sgemm bench/cpu/sgemm.c -ldl
 *   build/sgemm libopenblas.so.0 "" 1
 *   build/sgemm build/venv/lib/python3.11/site-packages/scipy_openblas32/lib/libscipy_openblas.so scipy_ 1
 * Arguments: library, symbol prefix, OpenBLAS threads. It prints the core the
 * library picked (OPENBLAS_CORETYPE in the environment overrides it). */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
typedef void (*sg)(int,int,int,int,int,int,float,const float*,int,const float*,int,float,float*,int);
typedef char* (*cn)(void);
typedef void (*st)(int);
static double now(){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec*1e-9;}
int main(int argc, char **argv) {
 if (argc < 4) { fprintf(stderr, "usage: %s LIB PREFIX THREADS\n", argv[0]); return 2; }
 void*h=dlopen(argv[1],RTLD_NOW|RTLD_LOCAL); if(!h){printf("%s\n",dlerror());return 1;}
 const char*p=argv[2]; char b[128];
 snprintf(b,sizeof b,"%scblas_sgemm",p); sg f=(sg)dlsym(h,b);
 snprintf(b,sizeof b,"%sopenblas_get_corename",p); cn c=(cn)dlsym(h,b);
 snprintf(b,sizeof b,"%sopenblas_set_num_threads",p); st s=(st)dlsym(h,b);
 if (!f || !c || !s) { fprintf(stderr, "%s: no %scblas_sgemm or openblas_* symbols\n", argv[1], p); return 1; }
 int th=atoi(argv[3]); s(th);
 printf("core=%s threads=%d\n",c(),th);
 int sizes[]={64,256,1024};
 for(int si=0;si<3;si++){int n=sizes[si];
  float*A=malloc(4*n*n),*B=malloc(4*n*n),*C=malloc(4*n*n);
  for(int i=0;i<n*n;i++){A[i]=i%7*0.1f;B[i]=i%5*0.2f;}
  f(101,111,111,n,n,n,1,A,n,B,n,0,C,n);
  int reps=1; double t0=now(),t;
  for(;;){for(int r=0;r<reps;r++)f(101,111,111,n,n,n,1,A,n,B,n,0,C,n); t=now()-t0; if(t>0.5)break; reps*=2; t0=now();}
  printf("  n=%d %.1f GFLOP/s\n",n,2.0*n*n*n*reps/t/1e9);
  free(A);free(B);free(C);}
}
