// Translates standard input line by line with tfm's C++ API (beam 4, float32, on the CPU).
//   translate_lines MODEL.pt < input.txt > output.txt
#include <exception>
#include <iostream>
#include <string>
#include <vector>

#include <tfm/translator.h>

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: translate_lines MODEL.pt < input.txt > output.txt\n";
    return 2;
  }
  try {
    const torch::Device cpu(torch::kCPU);
    tfm::LoadedModel loaded = tfm::load_model_file(argv[1], cpu);
    tfm::Tokenizer tokenizer = tfm::Tokenizer::from_serialized(loaded.tokenizer_proto, argv[1]);
    tfm::Translator translator({loaded.model}, tokenizer, tfm::TranslatorOptions{}, cpu);

    std::vector<std::string> lines;
    for (std::string line; std::getline(std::cin, line);) lines.push_back(line);
    for (const tfm::Translation& translation : translator.translate(lines)) {
      std::cout << translation.text() << "\n";
    }
    return 0;
  } catch (const std::exception& error) {
    std::cerr << "translate_lines: " << error.what() << "\n";
    return 1;
  }
}
