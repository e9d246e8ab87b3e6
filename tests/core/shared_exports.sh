#!/usr/bin/env bash
# shared_exports.sh <libknit.so>: libknit.so exports the public API and nothing else.
# Every defined dynamic symbol must belong to a name that include/knit/ marks KNIT_API
# (knit/export.hpp), and the ones the headers' inline code calls must be there. A new
# KNIT_API class or function goes into `public` below; an internal name that leaks (a
# src/ class, a std:: template instance) fails here.
set -euo pipefail
lib=$1
public='knit::(pool|pool_host|pool_options|shutdown_report|pool_stats|config_error)(::|$)'
public+='|knit::(process_options|process_error|process_workers|process_confinement)(::|$)'
public+='|knit::(error_category|parse_cpu_list|to_json|set_log_sink)(\[abi:cxx11\])?\('
public+='|knit::(register_process_task|has_process_task|worker_main)(\[abi:cxx11\])?\('
public+='|knit::(current_process_stats|current_process_confinement)\('
public+='|knit::(request_loop_slice|current_loop_slice|loop_slice_now)\('
symbols=$(nm -D --defined-only -C "$lib" | cut -d' ' -f3-)
[ -n "$symbols" ] || { echo "no exported symbol in $lib" >&2; exit 1; }
leaked=$(grep -Ev "^((typeinfo|typeinfo name|vtable) for )?($public)" <<<"$symbols" || true)
if [ -n "$leaked" ]; then
  echo "exported but not public API:" >&2
  echo "$leaked" >&2
  exit 1
fi
# What pool::submit's and submit_process's inline code calls, and what a catch of
# config_error or process_error needs.
for needed in 'knit::pool::admit(' 'knit::pool::enqueue(' 'knit::pool::enqueue_process(' \
              'knit::pool::allocate_call(' 'knit::pool_host::pool_host(' \
              'typeinfo for knit::config_error' 'knit::error_category()' \
              'knit::has_process_task(' 'typeinfo for knit::process_error'; do
  grep -qF "$needed" <<<"$symbols" || { echo "not exported: $needed" >&2; exit 1; }
done
# The test switches (src/fault_injection.hpp) are neither exported nor in an installed header.
include_dir=$(dirname "$0")/../../include
if grep -rlE 'allocation_countdown|interleaving_hook' "$include_dir"; then
  echo "a test switch is in an installed header (above)" >&2
  exit 1
fi
# The soname carries the version (libknit.so.MAJOR.MINOR before 1.0).
dynamic=$(readelf -d "$lib")
grep -Eq 'SONAME.*\[libknit\.so\.[0-9]+(\.[0-9]+)?\]' <<<"$dynamic" ||
  { echo "no versioned soname:" >&2; grep SONAME <<<"$dynamic" >&2; exit 1; }
echo "$(wc -l <<<"$symbols") exported symbols, all public API"
