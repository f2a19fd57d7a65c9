// ns-3 (3.37) mirror of an l4slab dumbbell, for `make bench-ns3`: two TCP senders share one
// bottleneck (FQ-CoDel, ECN on) toward two receivers; prints each flow's goodput after warmup.
// The same source builds against ns-3.48 (`make bench-ns3 NS3_BUILD=...`, C++23), whose FQ-CoDel
// still takes its quantum from the device MTU.
//
// It mirrors what l4slab simulates (crates/l4s-sim/src/world.rs): the whole base RTT is
// propagation on the bottleneck link (rtt/2 each way), access links are 100 Gb/s with no delay,
// MSS 1448 with timestamps (1500-byte IP packets), initial window 10, delayed ACK every 2nd
// segment or 40 ms, SACK, 200 ms minimum RTO, FQ-CoDel with 1024 flows, limit 10240 packets,
// target 5 ms, interval 100 ms (ns-3 takes the DRR quantum from the device MTU, 1500
// bytes, l4slab uses Linux's 1514: with 1500-byte packets both serve one packet per turn). The device under the qdisc holds one packet
// (l4slab's link holds none). Differences left: ns-3's point-to-point link adds a 2-byte PPP
// header per packet (0.13 % of a data packet's serialisation time) and serialises ACKs on the
// way back (l4slab's ACK path is uncongested and takes no serialisation time).

#include "ns3/applications-module.h"
#include "ns3/core-module.h"
#include "ns3/internet-module.h"
#include "ns3/network-module.h"
#include "ns3/point-to-point-module.h"
#include "ns3/traffic-control-module.h"
#include "l4slab_tcp.h"

#include <cstdio>
#include <string>

using namespace ns3;

static uint64_t g_rx_at_warmup[2];

int
main(int argc, char* argv[])
{
    std::string rate = "50Mbps";
    double rtt_ms = 40;
    double duration_s = 30;
    double warmup_s = 5;
    std::string cc0 = "TcpCubic";
    std::string cc1 = "TcpDctcp";
    uint32_t seed = 1;
    CommandLine cmd;
    cmd.AddValue("rate", "bottleneck rate (ns-3 DataRate)", rate);
    cmd.AddValue("rtt_ms", "base RTT, ms", rtt_ms);
    cmd.AddValue("duration", "simulated seconds", duration_s);
    cmd.AddValue("warmup", "seconds excluded from goodput", warmup_s);
    cmd.AddValue("cc0", "flow 0 congestion control (ns-3 TypeId without ns3::)", cc0);
    cmd.AddValue("cc1", "flow 1 congestion control", cc1);
    cmd.AddValue("seed", "RNG run number", seed);
    cmd.Parse(argc, argv);
    RngSeedManager::SetSeed(1);
    RngSeedManager::SetRun(seed);

    SetL4slabTcpDefaults();

    NodeContainer senders(2);
    NodeContainer receivers(2);
    NodeContainer routers(2);
    InternetStackHelper stack;
    stack.InstallAll();
    // Per-node socket type: both ends of a flow run its CC (DCTCP's receiver echoes CE per
    // packet, and only then is ECN negotiated).
    std::string ccs[2] = {cc0, cc1};
    for (int i = 0; i < 2; i++)
    {
        TypeIdValue tid(TypeId::LookupByName("ns3::" + ccs[i]));
        Config::Set("/NodeList/" + std::to_string(senders.Get(i)->GetId()) +
                        "/$ns3::TcpL4Protocol/SocketType",
                    tid);
        Config::Set("/NodeList/" + std::to_string(receivers.Get(i)->GetId()) +
                        "/$ns3::TcpL4Protocol/SocketType",
                    tid);
    }

    PointToPointHelper access;
    access.SetDeviceAttribute("DataRate", StringValue("100Gbps"));
    access.SetChannelAttribute("Delay", TimeValue(Seconds(0)));
    PointToPointHelper bottleneck;
    bottleneck.SetDeviceAttribute("DataRate", StringValue(rate));
    bottleneck.SetChannelAttribute("Delay", TimeValue(MicroSeconds(int64_t(rtt_ms * 500))));
    bottleneck.SetQueue("ns3::DropTailQueue", "MaxSize", StringValue("1p"));

    Ipv4AddressHelper addr;
    NetDeviceContainer bn = bottleneck.Install(routers.Get(0), routers.Get(1));
    addr.SetBase("10.0.0.0", "255.255.255.0");
    addr.Assign(bn);
    Ipv4InterfaceContainer rx_if[2];
    for (int i = 0; i < 2; i++)
    {
        NetDeviceContainer a = access.Install(senders.Get(i), routers.Get(0));
        addr.SetBase(("10.1." + std::to_string(i) + ".0").c_str(), "255.255.255.0");
        addr.Assign(a);
        NetDeviceContainer b = access.Install(routers.Get(1), receivers.Get(i));
        addr.SetBase(("10.2." + std::to_string(i) + ".0").c_str(), "255.255.255.0");
        rx_if[i] = addr.Assign(b);
    }
    TrafficControlHelper tch;
    tch.SetRootQueueDisc("ns3::FqCoDelQueueDisc",
                         "UseEcn", BooleanValue(true),
                         "Flows", UintegerValue(1024),
                         "MaxSize", StringValue("10240p"),
                         "Target", StringValue("5ms"),
                         "Interval", StringValue("100ms"));
    tch.Uninstall(bn.Get(0));
    tch.Install(bn.Get(0));
    Ipv4GlobalRoutingHelper::PopulateRoutingTables();

    Ptr<PacketSink> sinks[2];
    for (int i = 0; i < 2; i++)
    {
        uint16_t port = 5000 + i;
        PacketSinkHelper sink("ns3::TcpSocketFactory",
                              InetSocketAddress(Ipv4Address::GetAny(), port));
        ApplicationContainer s = sink.Install(receivers.Get(i));
        s.Start(Seconds(0));
        sinks[i] = DynamicCast<PacketSink>(s.Get(0));
        BulkSendHelper src("ns3::TcpSocketFactory",
                           InetSocketAddress(rx_if[i].GetAddress(1), port));
        src.SetAttribute("MaxBytes", UintegerValue(0));
        src.SetAttribute("SendSize", UintegerValue(1448));
        ApplicationContainer a = src.Install(senders.Get(i));
        a.Start(Seconds(0));
    }
    Simulator::Schedule(Seconds(warmup_s), [&]() {
        for (int i = 0; i < 2; i++)
        {
            g_rx_at_warmup[i] = sinks[i]->GetTotalRx();
        }
    });
    Simulator::Stop(Seconds(duration_s));
    Simulator::Run();
    double window = duration_s - warmup_s;
    for (int i = 0; i < 2; i++)
    {
        double mbps = double(sinks[i]->GetTotalRx() - g_rx_at_warmup[i]) * 8.0 / window / 1e6;
        std::printf("flow %d %s goodput_mbps %.3f\n", i, ccs[i].c_str(), mbps);
    }
    Simulator::Destroy();
    return 0;
}
