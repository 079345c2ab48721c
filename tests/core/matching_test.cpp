#include "core/matching.hpp"

#include <gtest/gtest.h>

#include <string>

namespace dsgd {
namespace {

using Queues = MatchQueues<int, std::string>;  // receives by id, messages by payload

TEST(CoreMatching, AnArrivalGoesToTheOldestPostedReceiveThatAcceptsIt) {
  Queues queues;
  queues.add_posted({2, 7}, 1);           // from rank 2 only
  queues.add_posted({kAnySource, 7}, 2);  // any source
  queues.add_posted({kAnySource, 7}, 3);
  EXPECT_EQ(queues.match_arrival({0, 7}), 2) << "receive 1 does not accept rank 0";
  EXPECT_EQ(queues.match_arrival({2, 7}), 1) << "receive 1 is older than receive 3";
  EXPECT_EQ(queues.match_arrival({2, 8}), std::nullopt) << "no receive of tag 8";
  EXPECT_EQ(queues.posted_count(), 1u);
}

TEST(CoreMatching, AReceiveTakesTheOldestUnexpectedMessageItAccepts) {
  Queues queues;
  queues.add_unexpected({1, 7}, "first from 1");
  queues.add_unexpected({0, 7}, "first from 0");
  queues.add_unexpected({1, 7}, "second from 1");
  queues.add_unexpected({1, 9}, "tag 9 from 1");
  const auto from_zero = queues.match_receive({0, 7});
  ASSERT_TRUE(from_zero);
  EXPECT_EQ(from_zero->second, "first from 0");
  EXPECT_EQ(from_zero->first.source, 0);
  // Non-overtaking: messages of one (source, tag) come out in the order they arrived.
  EXPECT_EQ(queues.match_receive({1, 7})->second, "first from 1");
  EXPECT_EQ(queues.match_receive({kAnySource, 7})->second, "second from 1");
  EXPECT_EQ(queues.match_receive({kAnySource, 7}), std::nullopt);
  EXPECT_EQ(queues.unexpected_count(), 1u);
}

TEST(CoreMatching, AWithdrawnReceiveTakesNothing) {
  Queues queues;
  queues.add_posted({kAnySource, 3}, 1);
  queues.add_posted({kAnySource, 3}, 2);
  EXPECT_TRUE(queues.withdraw(1));
  EXPECT_FALSE(queues.withdraw(1));
  EXPECT_EQ(queues.match_arrival({0, 3}), 2);
}

}  // namespace
}  // namespace dsgd
