// Test stub of CANN graph/ascend_string.h: only what the generated files use, copied from
// from: hicann/metadef@786891c02e5a7f509c6ffffd854e33ddefe3527c inc/external/graph/ascend_string.h
#pragma once
#include <cstddef>
#include <memory>
#include <string>
#include "graph/types.h"
namespace ge {
class AscendString {
 public:
  AscendString() = default;
  ~AscendString() = default;
  AscendString(const char_t *const name);
  const char_t *GetString() const;
  bool operator<(const AscendString &d) const;
  bool operator==(const AscendString &d) const;
 private:
  std::shared_ptr<std::string> name_;
};
}  // namespace ge
