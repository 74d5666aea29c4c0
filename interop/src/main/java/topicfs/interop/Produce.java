package topicfs.interop;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.errors.TopicExistsException;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * Writes N records to a topic with Apache Kafka's own producer (kafka-clients).
 * Prints one JSON line per acknowledged record: {"topic","partition","offset","timestamp"}.
 */
public final class Produce {
    static final String USAGE = String.join("\n",
        "usage: Produce --topic T [options]",
        "  --bootstrap HOST:PORT    broker (default 127.0.0.1:19092)",
        "  --topic T                topic (created if missing)",
        "  --partitions N           partitions when the topic is created (default 1)",
        "  --topic-config k=v,...   topic configs when the topic is created (e.g. segment.bytes=1048576)",
        "  --partition P            partition to write (default 0; -1 = Kafka's partitioner)",
        "  --count N                records to write (default 10)",
        "  --batch-records B        flush after every B records, i.e. B records per batch (default: all)",
        "  --compression C          none|gzip|snappy|lz4|zstd (default none)",
        "  --keys                   key = key-<i> (default: null key)",
        "  --headers                headers h1=v<i> and bin=00 01 02 ff on every record",
        "  --null-header            also a header 'hnull' with a null value",
        "  --tombstone-every K      value null on every K-th record",
        "  --value-prefix S         value = S<i> (default value-)",
        "  --value-size N           pad each value to N bytes (repetitive text, compresses well)",
        "  --timestamp T0           CreateTime = T0 + i*step (default: producer's clock)",
        "  --timestamp-step S       (default 1)",
        "  --idempotence true|false enable.idempotence (default true, Kafka's default)",
        "  --transactional-id ID    use a transactional producer, one transaction for all records",
        "  --abort                  abort the transaction instead of committing it",
        "  --leave-open             neither commit nor abort: the process halts with the transaction",
        "                           open (the coordinator aborts it after its timeout)",
        "  --transaction-timeout-ms MS  transaction.timeout.ms (default Kafka's, 60000)",
        "  --start-index I          first i (default 0)");

    public static void main(String[] argv) throws Exception {
        Args a = new Args(argv, USAGE, "keys", "headers", "null-header", "abort", "leave-open");
        String bootstrap = a.get("bootstrap", "127.0.0.1:19092");
        String topic = a.require("topic", USAGE);
        int partition = a.getInt("partition", 0);
        long count = a.getLong("count", 10);
        long batchRecords = a.getLong("batch-records", Math.max(count, 1));
        String compression = a.get("compression", "none");
        boolean keys = a.flag("keys");
        boolean headers = a.flag("headers");
        boolean nullHeader = a.flag("null-header");
        long tombstoneEvery = a.getLong("tombstone-every", 0);
        String valuePrefix = a.get("value-prefix", "value-");
        int valueSize = a.getInt("value-size", 0);
        Long t0 = a.has("timestamp") ? a.getLong("timestamp", 0) : null;
        long tStep = a.getLong("timestamp-step", 1);
        String txId = a.get("transactional-id", null);
        boolean abort = a.flag("abort");
        boolean leaveOpen = a.flag("leave-open");
        String txTimeout = a.get("transaction-timeout-ms", null);
        long start = a.getLong("start-index", 0);

        createTopic(bootstrap, topic, a.getInt("partitions", 1), a.get("topic-config", ""));

        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        p.put(ProducerConfig.COMPRESSION_TYPE_CONFIG, compression);
        p.put(ProducerConfig.ACKS_CONFIG, "all");
        p.put(ProducerConfig.LINGER_MS_CONFIG, "20000"); // batches are cut by flush()
        p.put(ProducerConfig.BATCH_SIZE_CONFIG, String.valueOf(4 * 1024 * 1024));
        p.put(ProducerConfig.MAX_REQUEST_SIZE_CONFIG, String.valueOf(8 * 1024 * 1024));
        p.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, a.get("idempotence", "true"));
        p.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, "30000");
        p.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, "15000");
        p.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, "60000");
        if (txId != null) p.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, txId);
        if (txTimeout != null) p.put(ProducerConfig.TRANSACTION_TIMEOUT_CONFIG, txTimeout);

        List<Future<RecordMetadata>> acks = new ArrayList<>();
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(p)) {
            if (txId != null) {
                producer.initTransactions();
                producer.beginTransaction();
            }
            for (long n = 0; n < count; n++) {
                long i = start + n;
                byte[] key = keys ? ("key-" + i).getBytes(StandardCharsets.UTF_8) : null;
                byte[] value = null;
                if (tombstoneEvery <= 0 || (n + 1) % tombstoneEvery != 0) {
                    value = pad(valuePrefix + i, valueSize).getBytes(StandardCharsets.UTF_8);
                }
                RecordHeaders hs = new RecordHeaders();
                if (headers) {
                    hs.add("h1", ("v" + i).getBytes(StandardCharsets.UTF_8));
                    hs.add("bin", new byte[] {0, 1, 2, (byte) 0xff});
                }
                if (nullHeader) hs.add("hnull", null);
                Long ts = t0 == null ? null : t0 + n * tStep;
                Integer part = partition < 0 ? null : partition;
                acks.add(producer.send(new ProducerRecord<>(topic, part, ts, key, value, hs)));
                if ((n + 1) % batchRecords == 0) producer.flush();
            }
            producer.flush();
            if (txId != null && !leaveOpen) {
                if (abort) producer.abortTransaction();
                else producer.commitTransaction();
            }
            StringBuilder out = new StringBuilder();
            for (Future<RecordMetadata> f : acks) {
                RecordMetadata m = f.get(30, TimeUnit.SECONDS);
                out.append("{\"topic\":").append(Args.str(m.topic()))
                   .append(",\"partition\":").append(m.partition())
                   .append(",\"offset\":").append(m.offset())
                   .append(",\"timestamp\":").append(m.timestamp())
                   .append("}\n");
            }
            System.out.print(out);
            System.out.flush();
            // close() would abort an open transaction: halt before it, as a crashed producer
            if (leaveOpen) Runtime.getRuntime().halt(0);
        }
    }

    static String pad(String s, int size) {
        if (s.length() >= size) return s;
        StringBuilder sb = new StringBuilder(size).append(s).append(' ');
        String filler = "the quick brown fox jumps over the lazy dog ";
        while (sb.length() < size) sb.append(filler);
        sb.setLength(size);
        return sb.toString();
    }

    static void createTopic(String bootstrap, String topic, int partitions, String configs) throws Exception {
        Properties ap = new Properties();
        ap.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        ap.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, "15000");
        ap.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "30000");
        try (Admin admin = Admin.create(ap)) {
            if (admin.listTopics().names().get(30, TimeUnit.SECONDS).contains(topic)) return;
            Map<String, String> cfg = new HashMap<>();
            for (String kv : configs.split(",")) {
                if (kv.isBlank()) continue;
                int eq = kv.indexOf('=');
                if (eq < 0) Args.fail(USAGE, "bad --topic-config entry: " + kv);
                cfg.put(kv.substring(0, eq).trim(), kv.substring(eq + 1).trim());
            }
            NewTopic nt = new NewTopic(topic, partitions, (short) 1).configs(cfg);
            try {
                admin.createTopics(Collections.singleton(nt)).all().get(30, TimeUnit.SECONDS);
            } catch (ExecutionException e) {
                if (!(e.getCause() instanceof TopicExistsException)) throw e;
            }
        }
    }
}
