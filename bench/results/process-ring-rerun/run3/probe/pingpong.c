#define _GNU_SOURCE
#include <linux/futex.h>
#include <sys/syscall.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <stdatomic.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sched.h>
static _Atomic int *w;
static int N=100000;
static int priv;
static void fwait(_Atomic int*a,int v){syscall(SYS_futex,a,priv?FUTEX_WAIT_PRIVATE:FUTEX_WAIT,v,0,0,0);}
static void fwake(_Atomic int*a){syscall(SYS_futex,a,priv?FUTEX_WAKE_PRIVATE:FUTEX_WAKE,1,0,0,0);}
static char *touch; static size_t touch_bytes;
static void work(void){ for(size_t i=0;i<touch_bytes;i+=4096) touch[i]++; }
static void* side(void*x){ for(int i=0;i<N;i++){ int x; while((x=atomic_load(&w[0]))!=2*i+1) fwait(&w[0],x); work(); atomic_store(&w[0],2*i+2); fwake(&w[0]);} return 0;}
static double now(){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec*1e-9;}
int main(int c,char**v){
  int proc=strcmp(v[1],"proc")==0; touch_bytes=(c>2?atol(v[2]):0)*4096;
  w=mmap(0,4096,PROT_READ|PROT_WRITE,MAP_SHARED|MAP_ANONYMOUS,-1,0);
  touch=malloc(touch_bytes+1); memset(touch,0,touch_bytes+1);
  cpu_set_t s;CPU_ZERO(&s);CPU_SET(0,&s);sched_setaffinity(0,sizeof s,&s);
  pthread_t t; pid_t p=0;
  if(proc){p=fork(); if(p==0){side(0);_exit(0);}} else pthread_create(&t,0,side,0);
  double t0=now();
  for(int i=0;i<N;i++){ atomic_store(&w[0],2*i+1); fwake(&w[0]); work(); int x; while((x=atomic_load(&w[0]))!=2*i+2) fwait(&w[0],x);}
  double t1=now();
  if(proc) waitpid(p,0,0); else pthread_join(t,0);
  printf("%s pages=%zu round trip %.2f us\n",v[1],touch_bytes/4096,(t1-t0)/N*1e6);
}
