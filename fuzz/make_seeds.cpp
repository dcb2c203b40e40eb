// Writes seed inputs for the fuzz targets into OUTDIR/<target>/: valid files made by tfm's own
// writers, so that mutation starts from inputs that reach past every format check.
//   fuzz_make_seeds OUTDIR
#include <torch/torch.h>
#include <zlib.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <string>

#include "data/dataset_file.h"
#include "model/model_file.h"

namespace fs = std::filesystem;

namespace {

void write(const fs::path& path, const std::string& bytes) {
  fs::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary) << bytes;
}

std::string read(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::string gzip(const std::string& text) {
  const fs::path path = fs::temp_directory_path() / "tfm-fuzz-seed.gz";
  gzFile file = gzopen(path.c_str(), "wb");
  gzwrite(file, text.data(), static_cast<unsigned>(text.size()));
  gzclose(file);
  std::string bytes = read(path);
  fs::remove(path);
  return bytes;
}

const std::string kSgml =
    "<refset setid=\"newstest\" srclang=\"any\" trglang=\"de\">\n<doc sysid=\"ref\" docid=\"1\">\n"
    "<p>\n<seg id=\"1\">  Ein  Hund &amp; eine Katze &lt;3 &#233;&#xE9; </seg>\n"
    "<seg id=\"2\">Zwei\tMänner.</seg>\n</p>\n</doc>\n</refset>\n";

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: fuzz_make_seeds OUTDIR\n";
    return 2;
  }
  const fs::path out = argv[1];
  const std::string two_files = std::string("A dog runs.\nTwo men.\r\nEin Hund rennt.\nZwei Männer.\r\n");
  write(out / "corpus_reader/tsv", std::string(1, '\0') + "A dog.\tEin Hund.\nTwo men\tZwei Männer\n");
  write(out / "corpus_reader/files", "\x01" + two_files);
  write(out / "corpus_reader/files_gz", "\x01" + gzip("A dog.\nTwo.") + gzip("Ein Hund.\nZwei."));
  write(out / "corpus_reader/sgml", "\x02" + kSgml + kSgml);
  write(out / "corpus_reader/stream", "\x03" + std::string("one\ntwo\r\n\nfour"));
  write(out / "sgml_reader/newstest.sgm", kSgml);
  write(out / "bleu_tokenizers/punctuation", "Hello, world! It's 3.14 -- \"quoted\" (1,000.5) end.");
  write(out / "bleu_tokenizers/unicode", "Grüße – „Zitat“ 東京都 ½ €5 ‹x› ﬁ");
  // api_requests: the first byte's bit 0 picks /v1/translate, bits 1-2 the Content-Type (JSON, none, form, other).
  write(out / "api_requests/libre_json",
        std::string(1, '\x00') + R"({"q": ["A dog.", "Zwei"], "source": "en", "target": "de", "alternatives": 2})");
  write(out / "api_requests/libre_form", std::string(1, '\x04') + "q=A dog.&q=Two&source=en&target=de&alternatives=1");
  write(out / "api_requests/v1_json",
        std::string(1, '\x01') +
            R"({"text": "A dog.", "beam": 5, "nbest": 2, "length_penalty": 0.6, "alignment": true, "api_key": "k"})");
  write(out / "api_requests/v1_untyped", std::string(1, '\x03') + R"( {"text": ["a", "b"], "source": "auto"})");

  tfm::ParallelDataset dataset;
  dataset.source.append({5, 6, 7});
  dataset.source.append({});
  dataset.target.append({8});
  dataset.target.append({9, 10});
  const fs::path dataset_path = out / "scratch.bin";
  tfm::save_dataset(dataset, 16, dataset_path.string());
  write(out / "dataset_loader/as_written", std::string(1, '\0') + read(dataset_path));
  write(out / "dataset_loader/checksums_fixed", std::string(1, '\1') + read(dataset_path));
  fs::remove(dataset_path);

  tfm::ModelConfig config;
  config.vocab_size = 8;
  config.d_model = 4;
  config.d_ff = 4;
  config.heads = 2;
  config.encoder_layers = 1;
  config.decoder_layers = 1;
  tfm::Transformer model(config);
  // The model target's first byte picks its mode (odd: past the zip checksums).
  const fs::path model_path = out / "scratch.pt";
  tfm::save_model_file(model_path.string(), model, "tokenizer bytes");
  write(out / "model_loader/tiny", std::string(1, '\0') + read(model_path));
  write(out / "model_loader/tiny_past_checksums", std::string(1, '\1') + read(model_path));
  // An int8 model file (`tfm quantize`): its quantized weights take a loader path of their own.
  tfm::save_model_file(model_path.string(), model, "tokenizer bytes", tfm::Shortlist(), tfm::ModelFileWeights::kInt8);
  write(out / "model_loader/tiny_int8", std::string(1, '\0') + read(model_path));
  write(out / "model_loader/tiny_int8_past_checksums", std::string(1, '\1') + read(model_path));
  fs::remove(model_path);
  std::cout << "seeds written under " << out.string() << "\n";
  return 0;
}
