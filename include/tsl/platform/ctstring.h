/* mstream: TensorFlow 2.15 C API, ABI-compatible declarations. */
#ifndef TENSORFLOW_TSL_PLATFORM_CTSTRING_H_
#define TENSORFLOW_TSL_PLATFORM_CTSTRING_H_

/* The TF_TString type and its inline functions:
 *   Init, Dealloc                     create / free (only LARGE owns memory)
 *   GetSize, GetCapacity, GetType     inspect
 *   GetDataPointer                    read-only bytes, any kind
 *   GetMutableDataPointer             writable bytes; VIEW/OFFSET are copied
 *   Resize, ResizeUninitialized       change the size
 *   Reserve, ReserveAmortized         grow the capacity
 *   AssignView                        refer to caller memory without owning it
 *   Append, AppendN, Copy             write bytes (result is owned)
 *   Assign, Move                      string to string
 * All are defined in ctstring_internal.h. */

#include <stdint.h>
#include <stdlib.h>

#include "tsl/platform/ctstring_internal.h"

#endif /* TENSORFLOW_TSL_PLATFORM_CTSTRING_H_ */
