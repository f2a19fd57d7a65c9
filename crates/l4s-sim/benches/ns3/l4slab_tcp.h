// l4slab's TCP endpoint defaults as ns-3 attributes, shared by the ns-3 mirrors (dumbbell.cc, wifi.cc).
// Follows crates/l4s-sim's stack: MSS 1448 with timestamps, IW 10, delayed ACK 2 / 40 ms, SACK, 200 ms min RTO.
#pragma once

#include "ns3/core-module.h"
#include "ns3/internet-module.h"

// Sets the defaults before any socket is created.
inline void
SetL4slabTcpDefaults()
{
    using namespace ns3;
    Config::SetDefault("ns3::TcpSocket::SegmentSize", UintegerValue(1448));
    Config::SetDefault("ns3::TcpSocket::InitialCwnd", UintegerValue(10));
    Config::SetDefault("ns3::TcpSocket::DelAckCount", UintegerValue(2));
    Config::SetDefault("ns3::TcpSocket::DelAckTimeout", TimeValue(MilliSeconds(40)));
    Config::SetDefault("ns3::TcpSocket::SndBufSize", UintegerValue(1 << 27));
    Config::SetDefault("ns3::TcpSocket::RcvBufSize", UintegerValue(1 << 27));
    Config::SetDefault("ns3::TcpSocketBase::Sack", BooleanValue(true));
    Config::SetDefault("ns3::TcpSocketBase::Timestamp", BooleanValue(true));
    Config::SetDefault("ns3::TcpSocketBase::MinRto", TimeValue(MilliSeconds(200)));
}
