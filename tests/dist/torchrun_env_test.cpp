#include "dist/torchrun_env.h"

#include <gtest/gtest.h>

#include <map>
#include <stdexcept>
#include <string>

namespace tfm {
namespace {

/// read_torchrun_env over a given set of variables.
std::optional<TorchrunEnv> read(const std::map<std::string, std::string>& variables) {
  return read_torchrun_env([&variables](const char* name) -> const char* {
    const auto found = variables.find(name);
    return found == variables.end() ? nullptr : found->second.c_str();
  });
}

std::string error_of(const std::map<std::string, std::string>& variables) {
  try {
    read(variables);
  } catch (const std::invalid_argument& error) {
    return error.what();
  }
  return "";
}

const std::map<std::string, std::string> kRank1Of4 = {{"MASTER_ADDR", "10.0.0.1"}, {"MASTER_PORT", "29500"},
                                                      {"WORLD_SIZE", "4"},         {"RANK", "1"},
                                                      {"LOCAL_RANK", "1"},         {"LOCAL_WORLD_SIZE", "2"}};

/// kRank1Of4 with `changes` set. (Not `variables[name] = "literal"`: GCC 12 warns, wrongly, that
/// the string's inlined copy overflows, -Wstringop-overflow.)
std::map<std::string, std::string> rank1_of_4_with(const std::map<std::string, std::string>& changes) {
  auto variables = kRank1Of4;
  for (const auto& [name, value] : changes) variables.insert_or_assign(name, value);
  return variables;
}

TEST(TorchrunEnv, OneProcessWithoutTheVariablesOrWithWorldSizeOne) {
  EXPECT_FALSE(read({}).has_value());
  EXPECT_FALSE(read({{"WORLD_SIZE", "1"}, {"RANK", "0"}}).has_value());
}

TEST(TorchrunEnv, ReadsWhatTorchrunSets) {
  const auto env = read(kRank1Of4);
  ASSERT_TRUE(env.has_value());
  EXPECT_EQ(env->master_addr, "10.0.0.1");
  EXPECT_EQ(env->master_port, 29500);
  EXPECT_EQ(env->world_size, 4);
  EXPECT_EQ(env->rank, 1);
  EXPECT_EQ(env->local_rank, 1);
  EXPECT_EQ(env->local_world_size, 2);
  auto without_local_world = kRank1Of4;
  without_local_world.erase("LOCAL_WORLD_SIZE");
  EXPECT_EQ(read(without_local_world)->local_world_size, 1);
}

TEST(TorchrunEnv, UnderTorchrunsAgentEveryRankIsAClientOfTheAgentsStore) {
  EXPECT_FALSE(read(kRank1Of4)->agent_store);
  const auto under_agent =
      rank1_of_4_with({{"TORCHELASTIC_USE_AGENT_STORE", "True"}, {"TORCHELASTIC_RESTART_COUNT", "2"}});
  const auto env = read(under_agent);
  EXPECT_TRUE(env->agent_store);
  EXPECT_EQ(env->restart_count, 2);
}

TEST(TorchrunEnv, AMissingOrMalformedVariableIsNamed) {
  for (const char* name : {"MASTER_ADDR", "MASTER_PORT", "RANK", "LOCAL_RANK"}) {
    auto variables = kRank1Of4;
    variables.erase(name);
    EXPECT_NE(error_of(variables).find(std::string(name) + " is not set"), std::string::npos) << name;
  }
  const auto rank_too_big = rank1_of_4_with({{"RANK", "4"}});
  EXPECT_NE(error_of(rank_too_big).find("RANK=4: expected an integer from 0 to 3"), std::string::npos);
  const auto bad_port = rank1_of_4_with({{"MASTER_PORT", "29500x"}});
  EXPECT_NE(error_of(bad_port).find("MASTER_PORT=29500x"), std::string::npos);
  EXPECT_NE(error_of({{"WORLD_SIZE", "0"}}).find("WORLD_SIZE=0"), std::string::npos);
}

}  // namespace
}  // namespace tfm
