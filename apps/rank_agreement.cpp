#include "rank_agreement.h"

#include <algorithm>
#include <cstdint>

#include "duet/autograd/factory.h"
#include "duet/core/error.h"
#include "run_settings.h"

namespace duet::apps {
namespace {

// One line per setting: "key=value\n" (no value holds a newline).
std::string settings_text(const NamedSettings& settings) {
  std::string text;
  for (const auto& [key, value] : settings) text += key + "=" + value + "\n";
  return text;
}

NamedSettings parse_settings(const std::string& text) {
  NamedSettings settings;
  for (size_t start = 0; start < text.size();) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    const std::string line = text.substr(start, end - start);
    const size_t equals = line.find('=');
    settings.emplace_back(line.substr(0, equals), equals == std::string::npos ? "" : line.substr(equals + 1));
    start = end + 1;
  }
  return settings;
}

// FNV-1a: a mismatch only has to be noticed, and the texts are then compared in full.
int64_t text_hash(const std::string& text) {
  uint64_t hash = 0xcbf29ce484222325ull;
  for (unsigned char c : text) hash = (hash ^ c) * 0x100000001b3ull;
  return static_cast<int64_t>(hash);
}

// Every rank's value of a one-element i64 tensor.
std::vector<int64_t> gather_number(parallel::Communicator& comm, int64_t value) {
  std::vector<int64_t> values;
  for (const Tensor& t : comm.all_gather(from_vector<int64_t>({value}, {1}, {.device = comm.device()}))) {
    values.push_back(t.to(cpu()).data<int64_t>()[0]);
  }
  return values;
}

// Every rank's text, each padded with zeros to the longest.
std::vector<std::string> gather_texts(parallel::Communicator& comm, const std::string& text) {
  const std::vector<int64_t> lengths = gather_number(comm, static_cast<int64_t>(text.size()));
  const int64_t longest = *std::max_element(lengths.begin(), lengths.end());
  std::vector<uint8_t> bytes(static_cast<size_t>(longest), 0);
  std::copy(text.begin(), text.end(), bytes.begin());
  std::vector<std::string> texts;
  const std::vector<Tensor> parts = comm.all_gather(from_vector<uint8_t>(bytes, {longest}, {.device = comm.device()}));
  for (size_t r = 0; r < parts.size(); ++r) {
    const Tensor host = parts[r].to(cpu());
    const auto* data = host.data<uint8_t>();
    texts.emplace_back(data, data + lengths[r]);
  }
  return texts;
}

std::string shape_text(const Tensor& t) {
  std::string text = "[";
  for (size_t i = 0; i < t.sizes().size(); ++i) text += (i ? "," : "") + std::to_string(t.sizes()[i]);
  return text + "]";
}

}  // namespace

NamedSettings rank_settings(const TrainArgs& args, int64_t first_epoch, const nn::Module& model) {
  // Each rank has its own device (and, on GPUs, picks it from its local rank).
  const std::vector<std::string> per_process = {"device", "devices", "device_ids"};
  NamedSettings settings = {{"model", args.model}};
  for (const auto& [key, value] : run_settings(args)) {
    if (key == "model" || std::find(per_process.begin(), per_process.end(), key) != per_process.end()) continue;
    settings.emplace_back(key, value);
  }
  settings.emplace_back("resumed after epoch", std::to_string(first_epoch));
  std::string shapes;
  for (const auto& [name, p] : model.named_parameters()) shapes += (shapes.empty() ? "" : " ") + name + shape_text(p);
  settings.emplace_back("parameter shapes", shapes);
  return settings;
}

void check_ranks_agree(parallel::Communicator& comm, const NamedSettings& settings) {
  const std::string text = settings_text(settings);
  const std::vector<int64_t> hashes = gather_number(comm, text_hash(text));
  if (std::all_of(hashes.begin(), hashes.end(), [&](int64_t h) { return h == hashes[0]; })) return;
  const std::vector<std::string> texts = gather_texts(comm, text);
  const NamedSettings first = parse_settings(texts[0]);
  for (size_t rank = 1; rank < texts.size(); ++rank) {
    if (texts[rank] == texts[0]) continue;
    const NamedSettings theirs = parse_settings(texts[rank]);
    for (size_t i = 0; i < std::max(first.size(), theirs.size()); ++i) {
      const auto missing = std::make_pair(std::string("(a setting this rank lacks)"), std::string("(none)"));
      const auto& a = i < first.size() ? first[i] : missing;
      const auto& b = i < theirs.size() ? theirs[i] : missing;
      if (a == b) continue;
      DUET_FAIL("the MPI ranks were started with different settings: ", a.first, " is '", a.second, "' on rank 0 but ",
                b.first == a.first ? "" : b.first + " ", "'", b.second, "' on rank ", rank,
                "; start every rank with the same flags");
    }
  }
  // Equal texts have equal hashes: only a collective that corrupted its data could get here.
  DUET_FAIL("the MPI ranks' settings have different hashes but the same text");
}

}  // namespace duet::apps
