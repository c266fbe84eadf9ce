#include "lib/cm/cm_types.hpp"

namespace roce::cm {

std::string to_string(CmEventType t) {
  switch (t) {
    case CmEventType::ReqReceived: return "REQ_RECEIVED";
    case CmEventType::RepReceived: return "REP_RECEIVED";
    case CmEventType::Established: return "ESTABLISHED";
    case CmEventType::RejReceived: return "REJ_RECEIVED";
    case CmEventType::MraReceived: return "MRA_RECEIVED";
    case CmEventType::DreqReceived: return "DREQ_RECEIVED";
    case CmEventType::DrepReceived: return "DREP_RECEIVED";
    case CmEventType::TimewaitExit: return "TIMEWAIT_EXIT";
    case CmEventType::ReqError: return "REQ_ERROR";
    case CmEventType::RepError: return "REP_ERROR";
    case CmEventType::DreqError: return "DREQ_ERROR";
    case CmEventType::ConsumerTimeout: return "CONSUMER_TIMEOUT";
    case CmEventType::SidrReqReceived: return "SIDR_REQ_RECEIVED";
    case CmEventType::SidrRepReceived: return "SIDR_REP_RECEIVED";
    case CmEventType::SidrReqError: return "SIDR_REQ_ERROR";
    case CmEventType::Count: break;
  }
  return "UNKNOWN";
}

}  // namespace roce::cm
