package topicfs.interop;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Properties;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/**
 * Reads topic-partitions from the beginning to their end offsets (as they are at start) with
 * Apache Kafka's own consumer (kafka-clients), and prints one JSON line per record, partition
 * after partition:
 * {"topic","partition","offset","timestamp","timestamp_type","key","value","headers":[[k, v]],"leader_epoch"}
 * key, value and header values are base64 (or null). Exit 1 if the end is not reached in time.
 */
public final class Consume {
    static final String USAGE = String.join("\n",
        "usage: Consume --topic T [options]",
        "  --bootstrap HOST:PORT    broker (default 127.0.0.1:19092)",
        "  --topic T[,T2...]        one or more topics",
        "  --partition P|all        (default 0; all = every partition of each topic, in order)",
        "  --isolation L            read_uncommitted|read_committed (default read_uncommitted)",
        "  --timeout-ms MS          give up after MS (default 30000)");

    public static void main(String[] argv) throws Exception {
        Args a = new Args(argv, USAGE);
        String bootstrap = a.get("bootstrap", "127.0.0.1:19092");
        String topics = a.require("topic", USAGE);
        String partitionArg = a.get("partition", "0");
        String isolation = a.get("isolation", "read_uncommitted");
        long timeoutMs = a.getLong("timeout-ms", 30000);

        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        p.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, isolation);
        p.put(ConsumerConfig.CHECK_CRCS_CONFIG, "true");
        p.put(ConsumerConfig.ALLOW_AUTO_CREATE_TOPICS_CONFIG, "false");
        p.put(ConsumerConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "30000");
        p.put(ConsumerConfig.REQUEST_TIMEOUT_MS_CONFIG, "15000");

        long deadline = System.currentTimeMillis() + timeoutMs;
        StringBuilder out = new StringBuilder();
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(p)) {
            List<TopicPartition> tps = new ArrayList<>();
            for (String topic : topics.split(",")) {
                if (partitionArg.equals("all")) {
                    List<PartitionInfo> infos = consumer.partitionsFor(topic);
                    if (infos == null || infos.isEmpty()) {
                        System.err.println("Consume: unknown topic " + topic);
                        System.exit(1);
                    }
                    List<Integer> ps = new ArrayList<>();
                    for (PartitionInfo pi : infos) ps.add(pi.partition());
                    Collections.sort(ps);
                    for (int part : ps) tps.add(new TopicPartition(topic, part));
                } else {
                    tps.add(new TopicPartition(topic, Integer.parseInt(partitionArg)));
                }
            }
            for (TopicPartition tp : tps) {
                consumer.assign(Collections.singleton(tp));
                consumer.seekToBeginning(Collections.singleton(tp));
                Map<TopicPartition, Long> ends = consumer.endOffsets(Collections.singleton(tp));
                long end = ends.get(tp);
                while (consumer.position(tp) < end) {
                    if (System.currentTimeMillis() > deadline) {
                        System.out.print(out);
                        System.out.flush();
                        System.err.println("Consume: timed out on " + tp + " at position "
                            + consumer.position(tp) + " before end offset " + end);
                        System.exit(1);
                    }
                    ConsumerRecords<byte[], byte[]> recs = consumer.poll(Duration.ofMillis(500));
                    for (ConsumerRecord<byte[], byte[]> r : recs) append(out, r);
                }
            }
        }
        System.out.print(out);
        System.out.flush();
    }

    static void append(StringBuilder out, ConsumerRecord<byte[], byte[]> r) {
        out.append("{\"topic\":").append(Args.str(r.topic()))
           .append(",\"partition\":").append(r.partition())
           .append(",\"offset\":").append(r.offset())
           .append(",\"timestamp\":").append(r.timestamp())
           .append(",\"timestamp_type\":").append(Args.str(r.timestampType().name))
           .append(",\"key\":").append(Args.b64(r.key()))
           .append(",\"value\":").append(Args.b64(r.value()))
           .append(",\"headers\":[");
        boolean first = true;
        for (Header h : r.headers()) {
            if (!first) out.append(',');
            first = false;
            out.append('[').append(Args.str(h.key())).append(',').append(Args.b64(h.value())).append(']');
        }
        out.append("],\"leader_epoch\":")
           .append(r.leaderEpoch().map(String::valueOf).orElse("null"))
           .append("}\n");
    }
}
