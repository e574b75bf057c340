// ns-3 twins of the engine bench's cases a, b and c (crates/qoslab-sim/
// examples/bench.rs; issue 12):
//   a  4 CUBIC flows, 20 s: senders -- r1 -- r2 -- receivers, access links
//      1 Gbit/s 1 ms, bottleneck 1 Gbit/s 0.5 ms (RTT 5 ms), 1000-packet FIFOs,
//      and on r1's bottleneck egress a TBF of 20 Mbit/s, burst 20000 B, limit
//      300000 B (ns-3's TbfQueueDisc, the same single-bucket shaper as Linux
//      tbf without a peak rate);
//   b  the same with a 20 Mbit/s single-rate policer (bc 625000 B = cir/32)
//      instead of the TBF. ns-3 3.44 has no policer (traffic-control holds
//      only queue discs that queue): PoliceQueueDisc below is one, written
//      for this twin — at enqueue, a token bucket of bc bytes refilled at cir
//      continuously; a packet that finds at least its size in tokens takes
//      them and is queued in a 1000-packet FIFO (the device's queue, sent at
//      line rate), otherwise it is dropped (Cisco single-rate two-colour
//      policing, conform = transmit, exceed = drop, as qoslab's `police`);
//   c  100 CUBIC flows, 102 s: access 1 Gbit/s 1 ms, bottleneck 70 Mbit/s 3 ms
//      (RTT 10 ms), 800-packet FIFO at the bottleneck, 1000 elsewhere,
//      receive window 65535 B without window scaling (ns-3's own 100-flow
//      dumbbell example's setting that issue 12 measured).
// Common: TCP CUBIC with SACK, MSS 1448, IW10, delayed ACK every 2 segments,
// 6 MB send buffers, bulk flows started at 0, device queues of 1 packet so
// the queue disc is the queue (as in qoslab).
// Usage: dumbbell_cases a|b|c   (prints goodput and wall time)
// Built and timed by benchmarks/ns3_compare.sh.
#include "ns3/applications-module.h"
#include "ns3/core-module.h"
#include "ns3/internet-module.h"
#include "ns3/network-module.h"
#include "ns3/point-to-point-module.h"
#include "ns3/traffic-control-module.h"

#include <chrono>
#include <cstdio>
#include <cstring>

using namespace ns3;

namespace ns3
{

/// Single-rate two-colour policer in front of a FIFO (see case b above).
class PoliceQueueDisc : public QueueDisc
{
  public:
    static TypeId GetTypeId()
    {
        static TypeId tid =
            TypeId("ns3::PoliceQueueDisc")
                .SetParent<QueueDisc>()
                .AddConstructor<PoliceQueueDisc>()
                .AddAttribute("Cir",
                              "committed information rate",
                              DataRateValue(DataRate("20Mbps")),
                              MakeDataRateAccessor(&PoliceQueueDisc::m_cir),
                              MakeDataRateChecker())
                .AddAttribute("Bc",
                              "committed burst, bytes",
                              UintegerValue(625000),
                              MakeUintegerAccessor(&PoliceQueueDisc::m_bc),
                              MakeUintegerChecker<uint64_t>());
        return tid;
    }

    PoliceQueueDisc()
        : QueueDisc(QueueDiscSizePolicy::SINGLE_INTERNAL_QUEUE)
    {
    }

  private:
    bool DoEnqueue(Ptr<QueueDiscItem> item) override
    {
        // Tokens in bit·ns / 1e9 units would overflow nothing here: keep
        // them in bits × 1e9 (exact integer refill: rate_bps × dt_ns).
        const uint64_t now = Simulator::Now().GetNanoSeconds();
        const unsigned __int128 cap = (unsigned __int128)m_bc * 8 * 1000000000ULL;
        m_tokens += (unsigned __int128)m_cir.GetBitRate() * (now - m_last);
        if (m_tokens > cap)
        {
            m_tokens = cap;
        }
        m_last = now;
        const unsigned __int128 need = (unsigned __int128)item->GetSize() * 8 * 1000000000ULL;
        if (need > m_tokens)
        {
            DropBeforeEnqueue(item, "exceed");
            return false;
        }
        m_tokens -= need;
        return GetInternalQueue(0)->Enqueue(item);
    }

    Ptr<QueueDiscItem> DoDequeue() override
    {
        return GetInternalQueue(0)->Dequeue();
    }

    bool CheckConfig() override
    {
        if (GetNInternalQueues() == 0)
        {
            AddInternalQueue(CreateObjectWithAttributes<DropTailQueue<QueueDiscItem>>(
                "MaxSize",
                QueueSizeValue(QueueSize("1000p"))));
        }
        return true;
    }

    void InitializeParams() override
    {
        m_tokens = (unsigned __int128)m_bc * 8 * 1000000000ULL; // starts full
        m_last = 0;
    }

    DataRate m_cir;
    uint64_t m_bc{0};
    unsigned __int128 m_tokens{0};
    uint64_t m_last{0};
};

NS_OBJECT_ENSURE_REGISTERED(PoliceQueueDisc);

} // namespace ns3

int main(int argc, char** argv)
{
    if (argc != 2 || std::strlen(argv[1]) != 1 || !std::strchr("abc", argv[1][0]))
    {
        std::fprintf(stderr, "usage: %s a|b|c\n", argv[0]);
        return 2;
    }
    const char c = argv[1][0];
    const uint32_t n = c == 'c' ? 100 : 4;
    const double secs = c == 'c' ? 102 : 20;

    Config::SetDefault("ns3::TcpL4Protocol::SocketType", TypeIdValue(TcpCubic::GetTypeId()));
    Config::SetDefault("ns3::TcpSocket::SegmentSize", UintegerValue(1448));
    Config::SetDefault("ns3::TcpSocket::InitialCwnd", UintegerValue(10));
    Config::SetDefault("ns3::TcpSocket::DelAckCount", UintegerValue(2));
    Config::SetDefault("ns3::TcpSocket::SndBufSize", UintegerValue(6 << 20));
    Config::SetDefault("ns3::TcpSocketBase::Sack", BooleanValue(true));
    if (c == 'c')
    {
        Config::SetDefault("ns3::TcpSocket::RcvBufSize", UintegerValue(65535));
        Config::SetDefault("ns3::TcpSocketBase::WindowScaling", BooleanValue(false));
    }
    else
    {
        Config::SetDefault("ns3::TcpSocket::RcvBufSize", UintegerValue(6 << 20));
    }

    NodeContainer senders, receivers, routers;
    senders.Create(n);
    receivers.Create(n);
    routers.Create(2);
    InternetStackHelper stack;
    stack.InstallAll();

    PointToPointHelper access, bottleneck;
    for (auto* h : {&access, &bottleneck})
    {
        h->SetQueue("ns3::DropTailQueue<Packet>", "MaxSize", QueueSizeValue(QueueSize("1p")));
    }
    access.SetDeviceAttribute("DataRate", DataRateValue(DataRate("1Gbps")));
    access.SetChannelAttribute("Delay", TimeValue(MilliSeconds(1)));
    bottleneck.SetDeviceAttribute("DataRate",
                                  DataRateValue(DataRate(c == 'c' ? "70Mbps" : "1Gbps")));
    bottleneck.SetChannelAttribute("Delay", TimeValue(c == 'c' ? MilliSeconds(3) : MicroSeconds(500)));

    TrafficControlHelper fifo;
    fifo.SetRootQueueDisc("ns3::FifoQueueDisc", "MaxSize", QueueSizeValue(QueueSize("1000p")));
    TrafficControlHelper egress; // r1's bottleneck egress
    if (c == 'a')
    {
        egress.SetRootQueueDisc("ns3::TbfQueueDisc",
                                "Rate", DataRateValue(DataRate("20Mbps")),
                                "Burst", UintegerValue(20000),
                                "MaxSize", QueueSizeValue(QueueSize("300000B")));
    }
    else if (c == 'b')
    {
        egress.SetRootQueueDisc("ns3::PoliceQueueDisc",
                                "Cir", DataRateValue(DataRate("20Mbps")),
                                "Bc", UintegerValue(625000));
    }
    else
    {
        egress.SetRootQueueDisc("ns3::FifoQueueDisc", "MaxSize", QueueSizeValue(QueueSize("800p")));
    }
    TrafficControlHelper reverse; // r2 toward r1
    reverse.SetRootQueueDisc("ns3::FifoQueueDisc",
                             "MaxSize", QueueSizeValue(QueueSize(c == 'c' ? "800p" : "1000p")));

    Ipv4AddressHelper addr;
    auto assign = [&](NetDeviceContainer d, uint32_t net) {
        char base[32];
        std::snprintf(base, sizeof base, "10.%u.%u.0", net / 256, net % 256);
        addr.SetBase(base, "255.255.255.0");
        return addr.Assign(d);
    };
    {
        NetDeviceContainer d = bottleneck.Install(routers.Get(0), routers.Get(1));
        egress.Install(d.Get(0));
        reverse.Install(d.Get(1));
        assign(d, 1);
    }
    std::vector<Ipv4Address> dst;
    for (uint32_t i = 0; i < n; ++i)
    {
        NetDeviceContainer s = access.Install(senders.Get(i), routers.Get(0));
        fifo.Install(s);
        assign(s, 2 + 2 * i);
        NetDeviceContainer r = access.Install(receivers.Get(i), routers.Get(1));
        fifo.Install(r);
        dst.push_back(assign(r, 3 + 2 * i).GetAddress(0));
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
