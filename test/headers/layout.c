/* ABI facts of the TF 2.15 C API: struct sizes and offsets, enum values,
 * macro values.
 *
 * abi_check.sh compiles this file against include/ and against TF's own
 * headers, as C11 and as C++11. The static assertions hold the numbers TF
 * 2.15 has on LP64 platforms (and the platform-independent ones everywhere);
 * the program also prints every fact, and the printouts of the two header
 * sets must be identical. The C++ build adds the exact type of every public
 * struct member (typeid names).
 */
#include <stddef.h>
#include <stdio.h>

#include "tensorflow/c/c_api.h"
#include "tensorflow/c/eager/c_api.h"

#ifdef __cplusplus
#include <typeinfo>
#define SA(c) static_assert(c, #c)
#define ALIGNOF(t) alignof(t)
#else
#define SA(c) _Static_assert(c, #c)
#define ALIGNOF(t) _Alignof(t)
#endif

/* ---- Platform-independent facts ---------------------------------------- */

SA(sizeof(TF_TString) == 24);
SA(sizeof(TF_TString_Raw) == 24);
SA(sizeof(TF_TString_Union) == 24);
SA(sizeof(TF_TString_Small) == 24);
SA(sizeof(TF_TString_Offset) == 12);
SA(TF_TString_SmallCapacity == 22);
SA(offsetof(TF_TString, u) == 0);
SA(offsetof(TF_TString_Small, size) == 0);
SA(offsetof(TF_TString_Small, str) == 1);
SA(sizeof(((TF_TString_Small *)0)->str) == 23);
SA(offsetof(TF_TString_Offset, size) == 0);
SA(offsetof(TF_TString_Offset, offset) == 4);
SA(offsetof(TF_TString_Offset, count) == 8);
SA(offsetof(TF_TString_Large, size) == 0);
SA(offsetof(TF_TString_Large, cap) == sizeof(size_t));
SA(offsetof(TF_TString_Large, ptr) == 2 * sizeof(size_t));
SA(offsetof(TF_TString_View, size) == 0);
SA(offsetof(TF_TString_View, ptr) == sizeof(size_t));
SA(sizeof(TF_Bool) == 1);

SA(TF_TSTR_SMALL == 0);
SA(TF_TSTR_LARGE == 1);
SA(TF_TSTR_OFFSET == 2);
SA(TF_TSTR_VIEW == 3);
SA(TF_TSTR_TYPE_MASK == 3);

SA(TF_FLOAT == 1);
SA(TF_DOUBLE == 2);
SA(TF_INT32 == 3);
SA(TF_UINT8 == 4);
SA(TF_INT16 == 5);
SA(TF_INT8 == 6);
SA(TF_STRING == 7);
SA(TF_COMPLEX64 == 8);
SA(TF_COMPLEX == 8);
SA(TF_INT64 == 9);
SA(TF_BOOL == 10);
SA(TF_QINT8 == 11);
SA(TF_QUINT8 == 12);
SA(TF_QINT32 == 13);
SA(TF_BFLOAT16 == 14);
SA(TF_QINT16 == 15);
SA(TF_QUINT16 == 16);
SA(TF_UINT16 == 17);
SA(TF_COMPLEX128 == 18);
SA(TF_HALF == 19);
SA(TF_RESOURCE == 20);
SA(TF_VARIANT == 21);
SA(TF_UINT32 == 22);
SA(TF_UINT64 == 23);
SA(TF_FLOAT8_E5M2 == 24);
SA(TF_FLOAT8_E4M3FN == 25);
SA(TF_INT4 == 29);
SA(TF_UINT4 == 30);

SA(TF_OK == 0);
SA(TF_CANCELLED == 1);
SA(TF_UNKNOWN == 2);
SA(TF_INVALID_ARGUMENT == 3);
SA(TF_DEADLINE_EXCEEDED == 4);
SA(TF_NOT_FOUND == 5);
SA(TF_ALREADY_EXISTS == 6);
SA(TF_PERMISSION_DENIED == 7);
SA(TF_RESOURCE_EXHAUSTED == 8);
SA(TF_FAILED_PRECONDITION == 9);
SA(TF_ABORTED == 10);
SA(TF_OUT_OF_RANGE == 11);
SA(TF_UNIMPLEMENTED == 12);
SA(TF_INTERNAL == 13);
SA(TF_UNAVAILABLE == 14);
SA(TF_DATA_LOSS == 15);
SA(TF_UNAUTHENTICATED == 16);
SA(TSL_OK == 0);
SA(TSL_UNAUTHENTICATED == 16);
SA(TSL_DATA_LOSS == 15);

SA(TF_ATTR_STRING == 0);
SA(TF_ATTR_INT == 1);
SA(TF_ATTR_FLOAT == 2);
SA(TF_ATTR_BOOL == 3);
SA(TF_ATTR_TYPE == 4);
SA(TF_ATTR_SHAPE == 5);
SA(TF_ATTR_TENSOR == 6);
SA(TF_ATTR_PLACEHOLDER == 7);
SA(TF_ATTR_FUNC == 8);

SA(TFE_DEVICE_PLACEMENT_EXPLICIT == 0);
SA(TFE_DEVICE_PLACEMENT_WARN == 1);
SA(TFE_DEVICE_PLACEMENT_SILENT == 2);
SA(TFE_DEVICE_PLACEMENT_SILENT_FOR_INT32 == 3);

SA(sizeof(TF_DataType) == sizeof(int));
SA(sizeof(TF_Code) == sizeof(int));
SA(sizeof(TF_AttrType) == sizeof(int));
SA(sizeof(TFE_ContextDevicePlacementPolicy) == sizeof(int));

/* ---- LP64 (x86-64, aarch64 Linux and macOS) ---------------------------- */

#if defined(__LP64__) || defined(_LP64)
SA(sizeof(TF_Output) == 16);
SA(offsetof(TF_Output, oper) == 0);
SA(offsetof(TF_Output, index) == 8);
SA(ALIGNOF(TF_Output) == 8);
SA(sizeof(TF_Input) == 16);
SA(offsetof(TF_Input, oper) == 0);
SA(offsetof(TF_Input, index) == 8);
SA(sizeof(TF_Buffer) == 24);
SA(offsetof(TF_Buffer, data) == 0);
SA(offsetof(TF_Buffer, length) == 8);
SA(offsetof(TF_Buffer, data_deallocator) == 16);
SA(sizeof(TF_AttrMetadata) == 32);
SA(offsetof(TF_AttrMetadata, is_list) == 0);
SA(offsetof(TF_AttrMetadata, list_size) == 8);
SA(offsetof(TF_AttrMetadata, type) == 16);
SA(offsetof(TF_AttrMetadata, total_size) == 24);
SA(sizeof(TF_StringView) == 16);
SA(offsetof(TF_StringView, len) == 8);
SA(sizeof(TF_AllocatorAttributes) == 16);
SA(offsetof(TF_AllocatorAttributes, on_host) == 8);
SA(TF_ALLOCATOR_ATTRIBUTES_STRUCT_SIZE == 9);
SA(sizeof(TF_WhileParams) == 72);
SA(offsetof(TF_WhileParams, cond_graph) == 8);
SA(offsetof(TF_WhileParams, cond_inputs) == 16);
SA(offsetof(TF_WhileParams, cond_output) == 24);
SA(offsetof(TF_WhileParams, body_graph) == 40);
SA(offsetof(TF_WhileParams, body_inputs) == 48);
SA(offsetof(TF_WhileParams, body_outputs) == 56);
SA(offsetof(TF_WhileParams, name) == 64);
SA(sizeof(TF_TString_Large) == 24);
SA(sizeof(TF_TString_View) == 16);
SA(ALIGNOF(TF_TString) == 8);
SA(offsetof(TF_TString, u.large.ptr) == 16);
SA(offsetof(TF_TString, u.view.ptr) == 8);
#endif

/* ---- Printout ----------------------------------------------------------- */

#define SIZE(t) printf("sizeof %s = %u, align %u\n", #t, (unsigned)sizeof(t), \
                       (unsigned)ALIGNOF(t))
#define FIELD(t, m)                                       \
  printf("  %s.%s at %u, size %u\n", #t, #m,              \
         (unsigned)offsetof(t, m), (unsigned)sizeof(((t *)0)->m))
#define VALUE(e) printf("%s = %ld\n", #e, (long)(e))
#ifdef __cplusplus
#define MTYPE(t, m) printf("  type %s.%s = %s\n", #t, #m, typeid(((t *)0)->m).name())
#else
#define MTYPE(t, m) ((void)0)
#endif
#define MEMBER(t, m) (FIELD(t, m), MTYPE(t, m))

int main(void) {
  SIZE(TF_Output);
  MEMBER(TF_Output, oper);
  MEMBER(TF_Output, index);
  SIZE(TF_Input);
  MEMBER(TF_Input, oper);
  MEMBER(TF_Input, index);
  SIZE(TF_Buffer);
  MEMBER(TF_Buffer, data);
  MEMBER(TF_Buffer, length);
  MEMBER(TF_Buffer, data_deallocator);
  SIZE(TF_AttrMetadata);
  MEMBER(TF_AttrMetadata, is_list);
  MEMBER(TF_AttrMetadata, list_size);
  MEMBER(TF_AttrMetadata, type);
  MEMBER(TF_AttrMetadata, total_size);
  SIZE(TF_StringView);
  MEMBER(TF_StringView, data);
  MEMBER(TF_StringView, len);
  SIZE(TF_AllocatorAttributes);
  MEMBER(TF_AllocatorAttributes, struct_size);
  MEMBER(TF_AllocatorAttributes, on_host);
  VALUE(TF_ALLOCATOR_ATTRIBUTES_STRUCT_SIZE);
  SIZE(TF_WhileParams);
  MEMBER(TF_WhileParams, ninputs);
  MEMBER(TF_WhileParams, cond_graph);
  MEMBER(TF_WhileParams, cond_inputs);
  MEMBER(TF_WhileParams, cond_output);
  MEMBER(TF_WhileParams, body_graph);
  MEMBER(TF_WhileParams, body_inputs);
  MEMBER(TF_WhileParams, body_outputs);
  MEMBER(TF_WhileParams, name);
  SIZE(TF_TString);
  MEMBER(TF_TString, u);
  MEMBER(TF_TString, u.smll);
  MEMBER(TF_TString, u.large);
  MEMBER(TF_TString, u.offset);
  MEMBER(TF_TString, u.view);
  MEMBER(TF_TString, u.raw);
  SIZE(TF_TString_Union);
  MEMBER(TF_TString_Union, large);
  MEMBER(TF_TString_Union, offset);
  MEMBER(TF_TString_Union, view);
  MEMBER(TF_TString_Union, raw);
  SIZE(TF_TString_Small);
  MEMBER(TF_TString_Small, size);
  MEMBER(TF_TString_Small, str);
  SIZE(TF_TString_Large);
  MEMBER(TF_TString_Large, size);
  MEMBER(TF_TString_Large, cap);
  MEMBER(TF_TString_Large, ptr);
  SIZE(TF_TString_Offset);
  MEMBER(TF_TString_Offset, size);
  MEMBER(TF_TString_Offset, offset);
  MEMBER(TF_TString_Offset, count);
  SIZE(TF_TString_View);
  MEMBER(TF_TString_View, size);
  MEMBER(TF_TString_View, ptr);
  SIZE(TF_TString_Raw);
  MEMBER(TF_TString_Raw, raw);
  VALUE(TF_TString_SmallCapacity);
  VALUE(sizeof(TF_TString_SmallCapacity));
  VALUE(TF_TSTRING_LITTLE_ENDIAN);
  VALUE(TF_le32toh(0x01020304u));
  VALUE(sizeof(TF_Bool));
  VALUE(TF_OFFSET_OF_END(TF_Buffer, length));
  VALUE(TF_TSTR_SMALL);
  VALUE(TF_TSTR_LARGE);
  VALUE(TF_TSTR_OFFSET);
  VALUE(TF_TSTR_VIEW);
  VALUE(TF_TSTR_TYPE_MASK);

  SIZE(TF_DataType);
  VALUE(TF_FLOAT);
  VALUE(TF_DOUBLE);
  VALUE(TF_INT32);
  VALUE(TF_UINT8);
  VALUE(TF_INT16);
  VALUE(TF_INT8);
  VALUE(TF_STRING);
  VALUE(TF_COMPLEX64);
  VALUE(TF_COMPLEX);
  VALUE(TF_INT64);
  VALUE(TF_BOOL);
  VALUE(TF_QINT8);
  VALUE(TF_QUINT8);
  VALUE(TF_QINT32);
  VALUE(TF_BFLOAT16);
  VALUE(TF_QINT16);
  VALUE(TF_QUINT16);
  VALUE(TF_UINT16);
  VALUE(TF_COMPLEX128);
  VALUE(TF_HALF);
  VALUE(TF_RESOURCE);
  VALUE(TF_VARIANT);
  VALUE(TF_UINT32);
  VALUE(TF_UINT64);
  VALUE(TF_FLOAT8_E5M2);
  VALUE(TF_FLOAT8_E4M3FN);
  VALUE(TF_INT4);
  VALUE(TF_UINT4);

  SIZE(TF_Code);
  VALUE(TF_OK);
  VALUE(TF_CANCELLED);
  VALUE(TF_UNKNOWN);
  VALUE(TF_INVALID_ARGUMENT);
  VALUE(TF_DEADLINE_EXCEEDED);
  VALUE(TF_NOT_FOUND);
  VALUE(TF_ALREADY_EXISTS);
  VALUE(TF_PERMISSION_DENIED);
  VALUE(TF_UNAUTHENTICATED);
  VALUE(TF_RESOURCE_EXHAUSTED);
  VALUE(TF_FAILED_PRECONDITION);
  VALUE(TF_ABORTED);
  VALUE(TF_OUT_OF_RANGE);
  VALUE(TF_UNIMPLEMENTED);
  VALUE(TF_INTERNAL);
  VALUE(TF_UNAVAILABLE);
  VALUE(TF_DATA_LOSS);
  VALUE(TSL_OK);
  VALUE(TSL_CANCELLED);
  VALUE(TSL_UNKNOWN);
  VALUE(TSL_INVALID_ARGUMENT);
  VALUE(TSL_DEADLINE_EXCEEDED);
  VALUE(TSL_NOT_FOUND);
  VALUE(TSL_ALREADY_EXISTS);
  VALUE(TSL_PERMISSION_DENIED);
  VALUE(TSL_UNAUTHENTICATED);
  VALUE(TSL_RESOURCE_EXHAUSTED);
  VALUE(TSL_FAILED_PRECONDITION);
  VALUE(TSL_ABORTED);
  VALUE(TSL_OUT_OF_RANGE);
  VALUE(TSL_UNIMPLEMENTED);
  VALUE(TSL_INTERNAL);
  VALUE(TSL_UNAVAILABLE);
  VALUE(TSL_DATA_LOSS);

  SIZE(TF_AttrType);
  VALUE(TF_ATTR_STRING);
  VALUE(TF_ATTR_INT);
  VALUE(TF_ATTR_FLOAT);
  VALUE(TF_ATTR_BOOL);
  VALUE(TF_ATTR_TYPE);
  VALUE(TF_ATTR_SHAPE);
  VALUE(TF_ATTR_TENSOR);
  VALUE(TF_ATTR_PLACEHOLDER);
  VALUE(TF_ATTR_FUNC);

  SIZE(TFE_ContextDevicePlacementPolicy);
  VALUE(TFE_DEVICE_PLACEMENT_EXPLICIT);
  VALUE(TFE_DEVICE_PLACEMENT_WARN);
  VALUE(TFE_DEVICE_PLACEMENT_SILENT);
  VALUE(TFE_DEVICE_PLACEMENT_SILENT_FOR_INT32);

#ifdef __cplusplus
  printf("type TF_Code = %s\n", typeid(TF_Code).name());
  printf("type TF_PayloadVisitor = %s\n", typeid(TF_PayloadVisitor).name());
  printf("type TF_Bool = %s\n", typeid(TF_Bool).name());
#endif
  return 0;
}
