package topicfs.interop;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.Collections;
import java.util.Properties;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.ListOffsetsResult;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.common.TopicPartition;

/**
 * Asks the broker where each timestamp starts (Admin.listOffsets with OffsetSpec.forTimestamp,
 * the ListOffsets request behind KafkaConsumer.offsetsForTimes and kafka-get-offsets --time).
 * Reads "topic partition timestamp [anything]" lines on stdin; prints
 * "topic partition timestamp offset" (offset -1 when no record has a timestamp >= it).
 */
public final class ListOffsets {
    static final String USAGE = String.join("\n",
        "usage: ListOffsets [--bootstrap HOST:PORT] < lines of 'topic partition timestamp'",
        "  --bootstrap HOST:PORT    broker (default 127.0.0.1:19092)");

    public static void main(String[] argv) throws Exception {
        Args a = new Args(argv, USAGE);
        Properties p = new Properties();
        p.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, a.get("bootstrap", "127.0.0.1:19092"));
        p.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, "15000");
        p.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "30000");
        StringBuilder out = new StringBuilder();
        try (Admin admin = Admin.create(p);
             BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8))) {
            String line;
            while ((line = in.readLine()) != null) {
                String[] f = line.trim().split("\\s+");
                if (f.length < 3) continue;
                TopicPartition tp = new TopicPartition(f[0], Integer.parseInt(f[1]));
                long ts = Long.parseLong(f[2]);
                ListOffsetsResult.ListOffsetsResultInfo info = admin
                    .listOffsets(Collections.singletonMap(tp, OffsetSpec.forTimestamp(ts)))
                    .partitionResult(tp).get(30, TimeUnit.SECONDS);
                out.append(f[0]).append(' ').append(f[1]).append(' ').append(ts).append(' ')
                   .append(info.offset()).append('\n');
            }
        }
        System.out.print(out);
        System.out.flush();
    }
}
