// The two text-format parsers of mstream's extensions (MS_GraphDefTextToBinary,
// MS_ConfigProtoTextToBinary), built over TensorFlow's own protobuf classes, so
// that the C programs of test/c and test/capidiff, which write their graphs as
// text, run unchanged against TF's libtensorflow. Linked only into the TF
// builds of those programs; mstream's library has its own parser.
#include <string>

#include "google/protobuf/text_format.h"
#include "tensorflow/c/c_api.h"
#include "tensorflow/core/framework/graph.pb.h"
#include "tensorflow/core/protobuf/config.pb.h"

namespace {

template <class Msg>
void TextToBinary(const char* what, const char* text, size_t len, TF_Buffer* out, TF_Status* status) {
  Msg msg;
  if (text == nullptr || out == nullptr) {
    TF_SetStatus(status, TF_INVALID_ARGUMENT, "NULL text or buffer");
    return;
  }
  if (!google::protobuf::TextFormat::ParseFromString(std::string(text, len), &msg)) {
    std::string m = std::string("cannot parse the text ") + what;
    TF_SetStatus(status, TF_INVALID_ARGUMENT, m.c_str());
    return;
  }
  std::string bin;
  msg.SerializeToString(&bin);
  void* data = malloc(bin.size() ? bin.size() : 1);
  memcpy(data, bin.data(), bin.size());
  if (out->data_deallocator) out->data_deallocator(const_cast<void*>(out->data), out->length);
  out->data = data;
  out->length = bin.size();
  out->data_deallocator = [](void* d, size_t) { free(d); };
  TF_SetStatus(status, TF_OK, "");
}

}  // namespace

extern "C" {
void MS_GraphDefTextToBinary(const char* text, size_t len, TF_Buffer* out, TF_Status* status) {
  TextToBinary<tensorflow::GraphDef>("GraphDef", text, len, out, status);
}
void MS_ConfigProtoTextToBinary(const char* text, size_t len, TF_Buffer* out, TF_Status* status) {
  TextToBinary<tensorflow::ConfigProto>("ConfigProto", text, len, out, status);
}
}
