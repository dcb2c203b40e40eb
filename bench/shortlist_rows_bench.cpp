// A decoding step's output layer with and without a shortlist: the full product over the whole
// vocabulary (PreparedWeight, as the decoder runs it) against shortlist_logits over each sentence's
// candidates, at a batch's sentences x a beam's rows, float32 and (where native) bfloat16, on all
// threads and on one; where the CPU has AMX tiles, the bfloat16 shortlist also with the 1,024 most
// frequently drawn ids as its shared candidates (model/shortlist_shared.h). Only for
// bench/shortlist_rows.sh.
//   tfm-shortlist-rows-bench [SENTENCES] [BEAM] [VOCABULARY] [D_MODEL] [CANDIDATES]
// A sentence's candidates: half drawn from the 2,000 most frequent ids (which every sentence's lists
// share, as their function words do), half from the whole vocabulary.
#include <ATen/Parallel.h>
#include <torch/torch.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <vector>

#include "best_ms.h"  // beside this file
#include "model/packed_weight.h"
#include "model/prepared_weight.h"
#include "model/shortlist_columns.h"
#include "model/shortlist_logits.h"
#include "model/shortlist_shared.h"

namespace {

/// [sentences, width] int64: each row's sorted candidates, padded with -1.
torch::Tensor draw_lists(int64_t sentences, int64_t vocabulary, int64_t candidates, int64_t& union_size) {
  std::vector<std::set<int64_t>> lists(static_cast<size_t>(sentences));
  std::set<int64_t> all;
  const int64_t frequent = std::min<int64_t>(2000, vocabulary);
  for (auto& list : lists) {
    while (static_cast<int64_t>(list.size()) < candidates / 2) list.insert(std::rand() % frequent);
    while (static_cast<int64_t>(list.size()) < candidates) list.insert(std::rand() % vocabulary);
    all.insert(list.begin(), list.end());
  }
  union_size = static_cast<int64_t>(all.size());
  auto out = torch::full({sentences, candidates}, -1, torch::kLong);
  for (int64_t s = 0; s < sentences; ++s) {
    int64_t c = 0;
    for (const int64_t id : lists[static_cast<size_t>(s)]) out[s][c++] = id;
  }
  return out;
}

/// The command line's sizes, in its order; the defaults a base-size step's at 32,000 subwords.
struct Sizes {
  int64_t sentences = 1, beam = 4, vocabulary = 32000, d = 512, candidates = 650;
};

Sizes sizes_of(int argc, char** argv) {
  Sizes sizes;
  int64_t* fields[] = {&sizes.sentences, &sizes.beam, &sizes.vocabulary, &sizes.d, &sizes.candidates};
  for (int i = 1; i < argc && i <= 5; ++i) *fields[i - 1] = std::atoll(argv[i]);
  return sizes;
}

}  // namespace

int main(int argc, char** argv) {
  const auto [sentences, beam, vocabulary, d, candidates] = sizes_of(argc, argv);
  torch::NoGradGuard no_grad;
  std::srand(1);
  int64_t union_size = 0;
  const auto lists = draw_lists(sentences, vocabulary, candidates, union_size);
  std::printf("%lld sentences x %lld rows, vocabulary %lld, d_model %lld, %lld candidates a sentence, %lld in all\n",
              static_cast<long long>(sentences), static_cast<long long>(beam), static_cast<long long>(vocabulary),
              static_cast<long long>(d), static_cast<long long>(candidates), static_cast<long long>(union_size));
  const int all = at::get_num_threads();
  const auto matrix32 = torch::randn({vocabulary, d}) * 0.05;
  const auto hidden32 = torch::randn({sentences * beam, d});
  for (const auto dtype : {torch::kFloat32, torch::kBFloat16}) {
    if (!tfm::PackedWeight::supported(torch::zeros({2, 2}, dtype))) continue;
    const auto matrix = matrix32.to(dtype).contiguous();
    const auto hidden = hidden32.to(dtype);
    const tfm::PreparedWeight full(tfm::PreparedWeight::Form::kOneDnn, matrix);
    const auto columns = tfm::shortlist_columns(matrix, lists, tfm::row_moments(matrix));
    for (const int threads : {all, 1}) {
      at::set_num_threads(threads);
      const int repeats = static_cast<int>(std::max<int64_t>(5, 2000 / sentences));
      const double full_ms = tfm::bench::best_ms(repeats, [&] { full.linear(hidden); });
      const double listed_ms =
          tfm::bench::best_ms(repeats, [&, rows = beam] { tfm::shortlist_logits(hidden, matrix, columns, rows); });
      std::printf("  %-8s %d thread(s): full product %9.1f us, shortlist %9.1f us: %.2fx",
                  dtype == torch::kFloat32 ? "float32" : "bfloat16", threads, full_ms * 1000, listed_ms * 1000,
                  full_ms / listed_ms);
      if (tfm::shared_candidates_supported(matrix)) {
        const auto shared_ids = torch::arange(std::min(tfm::kSharedCandidates, vocabulary), torch::kLong);
        const auto with_shared = tfm::shortlist_columns(matrix, lists, tfm::row_moments(matrix), 0,
                                                        tfm::shared_candidates(matrix, shared_ids));
        const double shared_ms = tfm::bench::best_ms(
            repeats, [&, rows = beam] { tfm::shortlist_logits(hidden, matrix, with_shared, rows); });
        std::printf("; with shared candidates %9.1f us: %.2fx", shared_ms * 1000, full_ms / shared_ms);
      }
      std::printf("\n");
    }
  }
  return 0;
}
