// ns-3 (3.37) mirror of an l4slab Wi-Fi hop, for `make bench-ns3-wifi`: TCP Cubic downlink from a
// wired server through one 802.11ac AP to 1..N client stations, with per-MPDU errors and other
// saturated stations; prints each flow's goodput after warmup and the MAC's PSDU counts.
//
// It mirrors what l4slab simulates (docs/WIFI.md, crates/l4s-core/src/wifi/): VHT-MCS `mcs`,
// 20 MHz, one stream, long GI, ConstantRateWifiManager (no rate control); A-MPDU with BlockAck
// (ns-3 sets up the agreement for VHT recipients), aggregates bounded by the BlockAck window (64)
// and aPPDUMaxTime (5.484 ms); the BlockAck answered at the 24 Mb/s basic rate; AC_BE EDCA
// (AIFSN 3, CW 15..1023, TXOP 0). Each received QoS Data MPDU (downlink data and the client's
// uplink TCP ACKs alike, as l4slab's `per` does) is lost with probability `per`
// (QosDataErrorModel as the PHY's PostReceptionErrorModel, which ns-3 consults per MPDU of an
// A-MPDU); control and management frames are not. The AP's queue is the WifiMacQueue alone: the
// traffic-control layer's default root qdisc (3.37: mq with one FqCoDelQueueDisc per AC, above the
// device's flow control) is removed, so packets go straight into a 500-packet drop-tail FIFO per
// AC that also holds the MPDUs in flight and awaiting retry, i.e. l4slab's `ap = "driver_fifo"`
// with `driver_limit_pkts = 500`. Its 500 ms MaxDelay (an ns-3 feature, no Linux counterpart) is
// raised to 10 s. The `contenders` other saturated stations sit in a second BSS on the same
// channel (l4slab's `stations`: outside this AP), each sending 1500-byte UDP packets to their AP
// as fast as they can, with no errors. The whole base RTT is on the wired server-AP link
// (rtt/2 each way, 10 Gb/s). TCP as in dumbbell.cc: MSS 1448 with timestamps, initial window 10,
// delayed ACK every 2nd segment or 40 ms, SACK, 200 ms minimum RTO.
//
// Differences left (docs/WIFI.md, "Against ns-3's wifi module"): ns-3.37's BlockAck recipient
// has no reorder timeout (mac80211 releases a hole after 100 ms); beacons of both APs; the other
// BSS's BlockAcks are real frames; the flows start at 1 s, once the stations are associated, and
// the contenders `contender_delay` seconds later (compare_wifi.py: 1 s; started with the flow
// they starve its ARP, TCP handshake and ADDBA).

#include "ns3/applications-module.h"
#include "ns3/core-module.h"
#include "ns3/internet-module.h"
#include "ns3/mobility-module.h"
#include "ns3/network-module.h"
#include "ns3/point-to-point-module.h"
#include "ns3/traffic-control-module.h"
#include "ns3/wifi-module.h"
#include "l4slab_tcp.h"

#include <cstdio>
#include <string>
#include <vector>

using namespace ns3;

// Loses each QoS Data MPDU addressed to `self` with probability `per`, other frames never (a
// frame for another receiver is discarded by the MAC anyway, and is not counted).
class QosDataErrorModel : public ErrorModel
{
  public:
    QosDataErrorModel(double per, Ptr<UniformRandomVariable> rng, Mac48Address self)
        : m_per(per),
          m_rng(rng),
          m_self(self)
    {
    }

    uint64_t m_seen = 0;
    uint64_t m_lost = 0;

  private:
    bool DoCorrupt(Ptr<Packet> p) override
    {
        uint8_t head[4];
        if (p->CopyData(head, 4) == 4 && head[3] == 0x4E)
        {
            // An S-MPDU starts with its A-MPDU delimiter (signature 0x4E in byte 3; an MPDU's
            // byte 3 is the Duration's high byte, 0x4E only for durations near 20 ms).
            p->RemoveAtStart(4);
        }
        WifiMacHeader hdr;
        if (p->GetSize() < 24 || p->PeekHeader(hdr) == 0 || !hdr.IsQosData() ||
            hdr.GetAddr1() != m_self)
        {
            return false;
        }
        m_seen++;
        bool lost = m_rng->GetValue() < m_per;
        m_lost += lost;
        return lost;
    }

    void DoReset() override
    {
    }

    double m_per;
    Ptr<UniformRandomVariable> m_rng;
    Mac48Address m_self;
};

struct PsduCount
{
    uint64_t psdus = 0;
    uint64_t mpdus = 0;
};

static bool g_counting = false;
static uint64_t g_ap_drops[4];

// DroppedMpdu on the AP's MAC: QoS Data MPDUs dropped, by reason, once counting has started.
static void
CountDrop(WifiMacDropReason reason, Ptr<const WifiMpdu> mpdu)
{
    if (g_counting && mpdu->GetHeader().IsQosData() && reason < 4)
    {
        g_ap_drops[reason]++;
    }
}

// PhyTxPsduBegin: count PSDUs carrying QoS Data and their MPDUs once counting has started.
static void
CountPsdu(PsduCount* c, WifiConstPsduMap psdus, WifiTxVector, double)
{
    if (!g_counting)
    {
        return;
    }
    for (auto& [id, psdu] : psdus)
    {
        if (psdu->GetHeader(0).IsQosData())
        {
            c->psdus++;
            c->mpdus += psdu->GetNMpdus();
        }
    }
}

int
main(int argc, char* argv[])
{
    uint32_t mcs = 5;
    uint32_t stations = 1;
    uint32_t contenders = 0;
    double per = 0;
    double rtt_ms = 20;
    double duration_s = 25;
    double warmup_s = 5;
    uint32_t queue_pkts = 500;
    uint32_t seed = 1;
    double contender_delay = 0;
    CommandLine cmd;
    cmd.AddValue("contender_delay", "contenders start this many seconds after the flows",
                 contender_delay);
    cmd.AddValue("mcs", "VHT-MCS at 20 MHz, one stream (0-8)", mcs);
    cmd.AddValue("stations", "client stations, one Cubic downlink flow each", stations);
    cmd.AddValue("contenders", "other saturated stations (second BSS, same channel)", contenders);
    cmd.AddValue("per", "per-MPDU error rate of QoS Data frames, [0, 1)", per);
    cmd.AddValue("rtt_ms", "base RTT on the wired link, ms", rtt_ms);
    cmd.AddValue("duration", "simulated seconds after the applications start", duration_s);
    cmd.AddValue("warmup", "seconds excluded from goodput", warmup_s);
    cmd.AddValue("queue_pkts", "WifiMacQueue size, packets", queue_pkts);
    cmd.AddValue("seed", "RNG run number", seed);
    cmd.Parse(argc, argv);
    if (mcs > 8 || stations < 1 || stations > 64 || contenders > 64 || per < 0 || per >= 1 ||
        warmup_s >= duration_s || queue_pkts < 1 || contender_delay < 0 ||
        contender_delay >= duration_s)
    {
        std::fprintf(stderr,
                     "wifi: mcs 0-8, stations 1-64, contenders 0-64, per in [0, 1), "
                     "warmup < duration, queue_pkts >= 1, 0 <= contender_delay < duration\n");
        return 2;
    }
    RngSeedManager::SetSeed(1);
    RngSeedManager::SetRun(seed);

    Config::SetDefault("ns3::TcpL4Protocol::SocketType", TypeIdValue(TcpCubic::GetTypeId()));
    SetL4slabTcpDefaults();
    Config::SetDefault("ns3::WifiMacQueue::MaxSize",
                       QueueSizeValue(QueueSize(std::to_string(queue_pkts) + "p")));
    Config::SetDefault("ns3::WifiMacQueue::MaxDelay", TimeValue(Seconds(10)));

    NodeContainer server(1);
    NodeContainer ap(1);
    NodeContainer stas(stations);
    NodeContainer other_ap(1);
    NodeContainer others(contenders);
    NodeContainer all(server, ap, stas);
    all.Add(other_ap);
    all.Add(others);

    // All radios within a few metres: every frame is decoded (no PHY error but `per`), and
    // every station hears every other (no hidden node), as in l4slab.
    MobilityHelper mobility;
    Ptr<ListPositionAllocator> pos = CreateObject<ListPositionAllocator>();
    for (uint32_t i = 0; i < all.GetN(); i++)
    {
        pos->Add(Vector(0.1 * i, 0, 0));
    }
    mobility.SetPositionAllocator(pos);
    mobility.SetMobilityModel("ns3::ConstantPositionMobilityModel");
    mobility.Install(all);

    WifiHelper wifi;
    wifi.SetStandard(WIFI_STANDARD_80211ac);
    std::string mode = "VhtMcs" + std::to_string(mcs);
    wifi.SetRemoteStationManager("ns3::ConstantRateWifiManager",
                                 "DataMode", StringValue(mode),
                                 "ControlMode", StringValue("OfdmRate24Mbps"));
    YansWifiChannelHelper channel = YansWifiChannelHelper::Default();
    YansWifiPhyHelper phy;
    phy.SetChannel(channel.Create());
    phy.Set("ChannelSettings", StringValue("{36, 20, BAND_5GHZ, 0}"));
    WifiMacHelper mac;
    Ssid ssid("l4slab");
    mac.SetType("ns3::StaWifiMac", "Ssid", SsidValue(ssid));
    NetDeviceContainer sta_dev = wifi.Install(phy, mac, stas);
    mac.SetType("ns3::ApWifiMac", "Ssid", SsidValue(ssid));
    NetDeviceContainer ap_dev = wifi.Install(phy, mac, ap);
    Ssid other_ssid("others");
    mac.SetType("ns3::StaWifiMac", "Ssid", SsidValue(other_ssid));
    NetDeviceContainer others_dev = wifi.Install(phy, mac, others);
    mac.SetType("ns3::ApWifiMac", "Ssid", SsidValue(other_ssid));
    NetDeviceContainer other_ap_dev = wifi.Install(phy, mac, other_ap);

    Ptr<UniformRandomVariable> err_rng = CreateObject<UniformRandomVariable>();
    err_rng->SetStream(1000);
    std::vector<Ptr<QosDataErrorModel>> errs;
    NetDeviceContainer bss(ap_dev, sta_dev);
    for (uint32_t i = 0; i < bss.GetN(); i++)
    {
        Ptr<QosDataErrorModel> em = Create<QosDataErrorModel>(
            per, err_rng, Mac48Address::ConvertFrom(bss.Get(i)->GetAddress()));
        DynamicCast<WifiNetDevice>(bss.Get(i))->GetPhy()->SetPostReceptionErrorModel(em);
        errs.push_back(em);
    }
    PsduCount down;
    PsduCount up;
    PsduCount other;
    DynamicCast<WifiNetDevice>(ap_dev.Get(0))
        ->GetMac()
        ->TraceConnectWithoutContext("DroppedMpdu", MakeCallback(&CountDrop));
    for (uint32_t i = 0; i < others_dev.GetN(); i++)
    {
        DynamicCast<WifiNetDevice>(others_dev.Get(i))
            ->GetPhy()
            ->TraceConnectWithoutContext("PhyTxPsduBegin", MakeBoundCallback(&CountPsdu, &other));
    }
    DynamicCast<WifiNetDevice>(ap_dev.Get(0))
        ->GetPhy()
        ->TraceConnectWithoutContext("PhyTxPsduBegin", MakeBoundCallback(&CountPsdu, &down));
    for (uint32_t i = 0; i < sta_dev.GetN(); i++)
    {
        DynamicCast<WifiNetDevice>(sta_dev.Get(i))
            ->GetPhy()
            ->TraceConnectWithoutContext("PhyTxPsduBegin", MakeBoundCallback(&CountPsdu, &up));
    }

    InternetStackHelper stack;
    stack.Install(all);
    PointToPointHelper wired;
    wired.SetDeviceAttribute("DataRate", StringValue("10Gbps"));
    wired.SetChannelAttribute("Delay", TimeValue(MicroSeconds(int64_t(rtt_ms * 500))));
    NetDeviceContainer wired_dev = wired.Install(server.Get(0), ap.Get(0));
    Ipv4AddressHelper addr;
    addr.SetBase("10.0.0.0", "255.255.255.0");
    addr.Assign(wired_dev);
    addr.SetBase("10.1.0.0", "255.255.255.0");
    Ipv4InterfaceContainer sta_if = addr.Assign(NetDeviceContainer(ap_dev, sta_dev));
    addr.SetBase("10.2.0.0", "255.255.255.0");
    Ipv4InterfaceContainer other_if = addr.Assign(NetDeviceContainer(other_ap_dev, others_dev));
    // No qdisc on any Wi-Fi device: the WifiMacQueue is the only queue (see the header).
    TrafficControlHelper tch;
    for (NetDeviceContainer* c : {&ap_dev, &sta_dev, &other_ap_dev, &others_dev})
    {
        for (uint32_t i = 0; i < c->GetN(); i++)
        {
            tch.Uninstall(c->Get(i));
        }
    }
    // Static routes (global routing takes the shared channel for one broadcast link and refuses
    // two subnets on it): the server and the clients route through the AP; the other BSS stays
    // within its subnet.
    Ipv4StaticRoutingHelper routing;
    routing.GetStaticRouting(server.Get(0)->GetObject<Ipv4>())
        ->SetDefaultRoute(Ipv4Address("10.0.0.2"), 1);
    for (uint32_t i = 0; i < stations; i++)
    {
        routing.GetStaticRouting(stas.Get(i)->GetObject<Ipv4>())
            ->SetDefaultRoute(sta_if.GetAddress(0), 1);
    }

    const double t0 = 1.0;
    std::vector<Ptr<PacketSink>> sinks;
    for (uint32_t i = 0; i < stations; i++)
    {
        uint16_t port = 5000 + i;
        PacketSinkHelper sink("ns3::TcpSocketFactory",
                              InetSocketAddress(Ipv4Address::GetAny(), port));
        ApplicationContainer s = sink.Install(stas.Get(i));
        s.Start(Seconds(0));
        sinks.push_back(DynamicCast<PacketSink>(s.Get(0)));
        BulkSendHelper src("ns3::TcpSocketFactory",
                           InetSocketAddress(sta_if.GetAddress(1 + i), port));
        src.SetAttribute("MaxBytes", UintegerValue(0));
        src.SetAttribute("SendSize", UintegerValue(1448));
        ApplicationContainer a = src.Install(server.Get(0));
        a.Start(Seconds(t0));
    }
    for (uint32_t i = 0; i < contenders; i++)
    {
        // 1472-byte UDP payloads: 1500-byte IP packets, offered well above the PHY rate.
        OnOffHelper onoff("ns3::UdpSocketFactory",
                          InetSocketAddress(other_if.GetAddress(0), 9));
        onoff.SetConstantRate(DataRate("200Mbps"), 1472);
        ApplicationContainer a = onoff.Install(others.Get(i));
        a.Start(Seconds(t0 + contender_delay));
    }

    std::vector<uint64_t> rx_at_warmup(stations);
    Simulator::Schedule(Seconds(t0 + warmup_s), [&]() {
        for (uint32_t i = 0; i < stations; i++)
        {
            rx_at_warmup[i] = sinks[i]->GetTotalRx();
        }
        g_counting = true;
    });
    Simulator::Stop(Seconds(t0 + duration_s));
    Simulator::Run();
    double window = duration_s - warmup_s;
    for (uint32_t i = 0; i < stations; i++)
    {
        double mbps = double(sinks[i]->GetTotalRx() - rx_at_warmup[i]) * 8.0 / window / 1e6;
        std::printf("flow %u station %u goodput_mbps %.3f\n", i, i, mbps);
    }
    std::printf("others psdus_per_s %.1f mpdus_per_psdu %.2f\n", other.psdus / window,
                other.psdus ? double(other.mpdus) / other.psdus : 0.0);
    std::printf("ap_drops failed_enqueue %lu expired %lu retry_limit %lu old %lu\n",
                (unsigned long)g_ap_drops[0], (unsigned long)g_ap_drops[1],
                (unsigned long)g_ap_drops[2], (unsigned long)g_ap_drops[3]);
    uint64_t seen = 0;
    uint64_t lost = 0;
    for (auto& e : errs)
    {
        seen += e->m_seen;
        lost += e->m_lost;
    }
    std::printf("downlink psdus_per_s %.1f mpdus_per_psdu %.2f\n", down.psdus / window,
                down.psdus ? double(down.mpdus) / down.psdus : 0.0);
    std::printf("uplink psdus_per_s %.1f mpdus_per_psdu %.2f\n", up.psdus / window,
                up.psdus ? double(up.mpdus) / up.psdus : 0.0);
    std::printf("qos_data_mpdus_received %lu lost %lu\n", (unsigned long)seen,
                (unsigned long)lost);
    Simulator::Destroy();
    return 0;
}
