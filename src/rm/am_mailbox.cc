// Copyright Weft authors.
#include "rm/am_mailbox.h"

#include <iterator>
#include <utility>

namespace weft::rm {

bool AmMailbox::HasNews() const {
  return !allocated_.empty() || !completed_.empty() || !recovered_.empty() || !updated_.empty() ||
         !rejected_.empty();
}

AmMailbox::Call AmMailbox::Classify(int32_t response_id) const {
  if (response_id + 1 == last_response_id_) return Call::kRetry;
  if (response_id != last_response_id_) return Call::kOutOfOrder;
  return Call::kNext;
}

std::vector<RmCompletion> AmMailbox::Fill(v1::AllocateResponse* resp) {
  resp->set_response_id(++last_response_id_);
  for (v1::Container& c : allocated_) *resp->add_allocated_containers() = std::move(c);
  allocated_.clear();
  std::vector<RmCompletion> acknowledged = std::move(sent_);
  sent_.clear();
  for (RmCompletion& done : completed_) {
    *resp->add_completed_containers() = done.status;
    sent_.push_back(std::move(done));
  }
  completed_.clear();
  for (v1::Container& c : recovered_) *resp->add_containers_from_previous_attempts() = std::move(c);
  recovered_.clear();
  for (v1::UpdatedContainer& u : updated_) *resp->add_updated_containers() = std::move(u);
  updated_.clear();
  for (v1::RejectedSchedulingRequest& r : rejected_)
    *resp->add_rejected_scheduling_requests() = std::move(r);
  rejected_.clear();
  return acknowledged;
}

void AmMailbox::Registered() {
  recovered_.clear();
  allocated_.clear();
  updated_.clear();
  completed_.insert(completed_.begin(), std::make_move_iterator(sent_.begin()),
                    std::make_move_iterator(sent_.end()));
  sent_.clear();
  last_response_id_ = 0;
  last_response_.Clear();
}

std::vector<RmCompletion> AmMailbox::TakeCompletions() {
  std::vector<RmCompletion> all = std::move(completed_);
  completed_.clear();
  all.insert(all.end(), std::make_move_iterator(sent_.begin()), std::make_move_iterator(sent_.end()));
  sent_.clear();
  return all;
}

}  // namespace weft::rm
