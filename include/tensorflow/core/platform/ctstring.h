/* mstream: TensorFlow 2.15 C API, ABI-compatible declarations. */
#ifndef TENSORFLOW_CORE_PLATFORM_CTSTRING_H_
#define TENSORFLOW_CORE_PLATFORM_CTSTRING_H_

/* TF_TString lives in TSL; this is TF's historical path to it. */
#include "tsl/platform/ctstring.h"

#endif /* TENSORFLOW_CORE_PLATFORM_CTSTRING_H_ */
