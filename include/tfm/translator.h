#pragma once
// tfm's C++ API for translation (what examples/translate_lines.cpp uses): load a model file,
// then translate lines of raw text with beam, greedy or sampling search.
#include "model/model_file.h"        // load_model_file: the config, weights and tokenizer of a model
#include "tokenizer/tokenizer.h"     // Tokenizer::from_serialized: the model's SentencePiece model
#include "translation/translator.h"  // Translator: text in, text out (TranslatorOptions: search, batching)
