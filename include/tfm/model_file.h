#pragma once
// tfm's model files (and checkpoints): load_model_file, save_model_file, LoadedModel.
#include "model/model_file.h"
