// ns-3 twin of qoslab's scenario benchmarks/ns3/dumbbell_fifo.toml (issue 12):
// N senders s_i -- r1 -- r2 -- d_i, every link RATE, access delay 1 ms,
// bottleneck 0.5 ms (RTT 5 ms), a 1000-packet FIFO queue disc on every
// device (device queue 1 packet, so the qdisc is the queue, as in qoslab),
// N bulk TCP flows s_i -> d_i started at 0, TCP CUBIC, SACK, MSS 1448,
// initial window 10, delayed ACK every 2 segments, 6 MB buffers.
// Usage: dumbbell_fifo RATE_BPS SECONDS FLOWS   (prints goodput and wall time)
// Built and timed by benchmarks/ns3_compare.sh.
#include "ns3/applications-module.h"
#include "ns3/core-module.h"
#include "ns3/internet-module.h"
#include "ns3/network-module.h"
#include "ns3/point-to-point-module.h"
#include "ns3/traffic-control-module.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>

using namespace ns3;

int main(int argc, char** argv)
{
    if (argc != 4)
    {
        std::fprintf(stderr, "usage: %s RATE_BPS SECONDS FLOWS\n", argv[0]);
        return 2;
    }
    const uint64_t bps = std::strtoull(argv[1], nullptr, 10);
    const double secs = std::atof(argv[2]);
    const uint32_t n = std::strtoul(argv[3], nullptr, 10);

    Config::SetDefault("ns3::TcpL4Protocol::SocketType", TypeIdValue(TcpCubic::GetTypeId()));
    Config::SetDefault("ns3::TcpSocket::SegmentSize", UintegerValue(1448));
    Config::SetDefault("ns3::TcpSocket::InitialCwnd", UintegerValue(10));
    Config::SetDefault("ns3::TcpSocket::DelAckCount", UintegerValue(2));
    Config::SetDefault("ns3::TcpSocket::SndBufSize", UintegerValue(6 << 20));
    Config::SetDefault("ns3::TcpSocket::RcvBufSize", UintegerValue(6 << 20));
    Config::SetDefault("ns3::TcpSocketBase::Sack", BooleanValue(true));

    NodeContainer senders, receivers, routers;
    senders.Create(n);
    receivers.Create(n);
    routers.Create(2);
    InternetStackHelper stack;
    stack.InstallAll();

    PointToPointHelper access, bottleneck;
    for (auto* h : {&access, &bottleneck})
    {
        h->SetDeviceAttribute("DataRate", DataRateValue(DataRate(bps)));
        h->SetQueue("ns3::DropTailQueue<Packet>", "MaxSize", QueueSizeValue(QueueSize("1p")));
    }
    access.SetChannelAttribute("Delay", TimeValue(MilliSeconds(1)));
    bottleneck.SetChannelAttribute("Delay", TimeValue(MicroSeconds(500)));
    TrafficControlHelper fifo;
    fifo.SetRootQueueDisc("ns3::FifoQueueDisc", "MaxSize", QueueSizeValue(QueueSize("1000p")));

    Ipv4AddressHelper addr;
    auto link = [&](PointToPointHelper& h, Ptr<Node> a, Ptr<Node> b, uint32_t net) {
        NetDeviceContainer d = h.Install(a, b);
        fifo.Install(d);
        char base[32];
        std::snprintf(base, sizeof base, "10.%u.%u.0", net / 256, net % 256);
        addr.SetBase(base, "255.255.255.0");
        return addr.Assign(d);
    };
    link(bottleneck, routers.Get(0), routers.Get(1), 1);
    std::vector<Ipv4Address> dst;
    for (uint32_t i = 0; i < n; ++i)
    {
        link(access, senders.Get(i), routers.Get(0), 2 + 2 * i);
        dst.push_back(link(access, receivers.Get(i), routers.Get(1), 3 + 2 * i).GetAddress(0));
    }
    Ipv4GlobalRoutingHelper::PopulateRoutingTables();

    std::vector<Ptr<PacketSink>> sinks;
    for (uint32_t i = 0; i < n; ++i)
    {
        BulkSendHelper src("ns3::TcpSocketFactory", InetSocketAddress(dst[i], 5201));
        src.SetAttribute("MaxBytes", UintegerValue(0));
        src.Install(senders.Get(i)).Start(Seconds(0));
        PacketSinkHelper sink("ns3::TcpSocketFactory", InetSocketAddress(Ipv4Address::GetAny(), 5201));
        ApplicationContainer a = sink.Install(receivers.Get(i));
        a.Start(Seconds(0));
        sinks.push_back(DynamicCast<PacketSink>(a.Get(0)));
    }

    Simulator::Stop(Seconds(secs));
    auto t0 = std::chrono::steady_clock::now();
    Simulator::Run();
    double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    uint64_t bytes = 0;
    for (auto& s : sinks)
    {
        bytes += s->GetTotalRx();
    }
    std::printf("ns3 wall %.3f s goodput %.3f Mbit/s\n", wall, bytes * 8.0 / secs / 1e6);
    Simulator::Destroy();
    return 0;
}
