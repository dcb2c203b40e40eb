#pragma once

namespace tfm {

/// While one lives on this thread, tfm's modules leave the parameters they create uninitialised
/// instead of drawing random values: for a model whose every parameter is overwritten next
/// (loaded from a file that must hold each one, or copied from another model). A base-size model
/// draws ~60M random numbers otherwise, twice when a translator copies it. (An untied output
/// projection, LibTorch's own Linear, still initialises its weight.)
class SkipParameterInit {
 public:
  SkipParameterInit();
  ~SkipParameterInit();
  SkipParameterInit(const SkipParameterInit&) = delete;
  SkipParameterInit& operator=(const SkipParameterInit&) = delete;

 private:
  bool previous_;
};

/// Whether a SkipParameterInit lives on this thread.
bool parameter_init_skipped();

}  // namespace tfm
