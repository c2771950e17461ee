package roster.judge;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.TaskMetadata;
import org.apache.kafka.streams.ThreadMetadata;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.processor.StateRestoreListener;

/**
 * A stateful Kafka Streams application, one static instance per JVM: records (key, word) of
 * INPUT are re-keyed by word (a repartition topic), counted in a persistent RocksDB store (a
 * compacted changelog) and the counts written to OUTPUT.
 *
 *   CountsApp BOOTSTRAP APPLICATION_ID INSTANCE_ID STATE_DIR INPUT OUTPUT [key=value ...]
 *
 * A setting given with no value ("key=") removes it: main.consumer.group.instance.id= makes
 * the instance a dynamic member (its client id stays INSTANCE_ID).
 *
 * It prints JSON lines (Events): every state change, the tasks it runs once RUNNING, each
 * restoration from a changelog (start, end), and "closed". A line "close" on stdin closes it
 * (a static member: no LeaveGroup); kill -9 is the other way out.
 */
public final class CountsApp {
    public static final String STORE = "counts";

    public static void main(String[] args) throws Exception {
        String instance = args[2];
        Properties props = new Properties();
        props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        props.put(StreamsConfig.APPLICATION_ID_CONFIG, args[1]);
        props.put(StreamsConfig.CLIENT_ID_CONFIG, instance);
        props.put(StreamsConfig.STATE_DIR_CONFIG, args[3]);
        props.put(StreamsConfig.mainConsumerPrefix(ConsumerConfig.GROUP_INSTANCE_ID_CONFIG), instance);
        props.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, 1);
        props.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, 100);
        props.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, 0);
        props.put(StreamsConfig.REPLICATION_FACTOR_CONFIG, 1);
        for (int i = 6; i < args.length; i++) {
            int eq = args[i].indexOf('=');
            String key = args[i].substring(0, eq), value = args[i].substring(eq + 1);
            if (value.isEmpty()) {
                props.remove(key);
            } else {
                props.put(key, value);
            }
        }

        StreamsBuilder builder = new StreamsBuilder();
        builder.stream(args[4], Consumed.with(Serdes.String(), Serdes.String()))
                .groupBy((key, word) -> word, Grouped.with("by-word", Serdes.String(), Serdes.String()))
                .count(Materialized.as(STORE))
                .toStream()
                .to(args[5], Produced.with(Serdes.String(), Serdes.Long()));

        KafkaStreams streams = new KafkaStreams(builder.build(), props);
        streams.setGlobalStateRestoreListener(new Restores(instance));
        streams.setStateListener((now, before) -> {
            Map<String, Object> event = Events.event("state", instance);
            event.put("state", now.name());
            event.put("from", before.name());
            if (now == KafkaStreams.State.RUNNING) {
                List<String> active = new ArrayList<>();
                List<String> standby = new ArrayList<>();
                for (ThreadMetadata thread : streams.metadataForLocalThreads()) {
                    for (TaskMetadata task : thread.activeTasks()) active.add(task.taskId().toString());
                    for (TaskMetadata task : thread.standbyTasks()) standby.add(task.taskId().toString());
                }
                active.sort(null);
                standby.sort(null);
                event.put("active", active);
                event.put("standby", standby);
            }
            Events.emit(event);
        });
        streams.setUncaughtExceptionHandler(error -> {
            Events.emit(Events.failure("error", instance, error));
            return org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler
                    .StreamThreadExceptionResponse.SHUTDOWN_CLIENT;
        });
        streams.start();

        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null && !line.trim().equals("close")) {
            // only "close" is understood
        }
        streams.close(Duration.ofSeconds(30));
        Events.emit(Events.event("closed", instance));
        System.exit(0);
    }

    /** Each restoration from a changelog: the tests assert there is none after a bounce. */
    private record Restores(String instance) implements StateRestoreListener {
        private Map<String, Object> event(String kind, TopicPartition partition, String store) {
            Map<String, Object> event = Events.event(kind, instance);
            event.put("partition", partition.topic() + "-" + partition.partition());
            event.put("store", store);
            return event;
        }

        @Override
        public void onRestoreStart(TopicPartition partition, String store, long start, long end) {
            Map<String, Object> event = event("restore-start", partition, store);
            event.put("start", start);
            event.put("end", end);
            Events.emit(event);
        }

        @Override
        public void onBatchRestored(TopicPartition partition, String store, long batchEnd, long count) {
        }

        @Override
        public void onRestoreEnd(TopicPartition partition, String store, long total) {
            Map<String, Object> event = event("restore-end", partition, store);
            event.put("restored", total);
            Events.emit(event);
        }
    }
}
