#pragma once
// Version 1 of the dataset file (what `tfm prepare` wrote before shards): after the header,
// source offsets int64[P+1], target offsets int64[P+1], source ids, target ids. Read whole into
// memory, so a directory prepared by an older tfm still trains.
#include <string>

#include "data/dataset_header.h"
#include "data/shard.h"

namespace tfm {

/// Reads and verifies the version-1 file at `path` whose header is `header`.
/// std::runtime_error naming `path` for a truncated or corrupt file.
Shard read_version1_shard(const std::string& path, const DatasetHeader& header);

}  // namespace tfm
