package roster.judge;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Arrays;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.MemberToRemove;
import org.apache.kafka.clients.admin.RemoveMembersFromConsumerGroupOptions;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerGroupMetadata;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.WakeupException;
import org.apache.kafka.common.serialization.StringDeserializer;

/**
 * Several KafkaConsumers in one JVM, each on its own thread, driven by lines on stdin:
 *
 *   start NAME TOPIC[,TOPIC] key=value ...   a consumer (client.id=NAME) subscribing to TOPICs
 *   stop NAME                                 close() it (a static member sends no LeaveGroup)
 *   remove BOOTSTRAP GROUP INSTANCE_ID        Admin.removeMembersFromConsumerGroup by instance id
 *   quit                                      close everything and exit
 *
 * and printing JSON lines (Events): started/closed, assigned/revoked/lost with the partitions and
 * the member's groupMetadata(), "group" whenever the generation or member id changes, each record
 * consumed, and errors. One JVM keeps the tests' start-up cost to one.
 */
public final class Consumers {
    private static final Map<String, Member> MEMBERS = new ConcurrentHashMap<>();

    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        Events.emit(Events.event("ready", null));
        String line;
        while ((line = in.readLine()) != null) {
            String[] words = line.trim().split("\\s+");
            if (words.length == 0 || words[0].isEmpty()) continue;
            try {
                switch (words[0]) {
                    case "start" -> start(words[1], words[2], Arrays.copyOfRange(words, 3, words.length));
                    case "stop" -> stop(words[1]);
                    case "remove" -> remove(words[1], words[2], words[3]);
                    case "quit" -> {
                        MEMBERS.keySet().forEach(Consumers::stop);
                        Events.emit(Events.event("bye", null));
                        System.exit(0);
                    }
                    default -> Events.emit(Events.failure("bad-command", null,
                            new IllegalArgumentException(line)));
                }
            } catch (RuntimeException e) {
                Events.emit(Events.failure("bad-command", null, e));
            }
        }
        MEMBERS.keySet().forEach(Consumers::stop);
        System.exit(0);
    }

    private static void start(String name, String topics, String[] settings) {
        Properties props = new Properties();
        props.put(ConsumerConfig.CLIENT_ID_CONFIG, name);
        props.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        props.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        props.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        for (String setting : settings) {
            int eq = setting.indexOf('=');
            props.put(setting.substring(0, eq), setting.substring(eq + 1));
        }
        Member member = new Member(name, List.of(topics.split(",")), props);
        if (MEMBERS.putIfAbsent(name, member) != null) {
            throw new IllegalArgumentException("member " + name + " is running");
        }
        member.thread.start();
    }

    private static void stop(String name) {
        Member member = MEMBERS.get(name);
        if (member == null) return;
        member.stopping = true;
        member.consumer.wakeup();
        try {
            member.thread.join();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        MEMBERS.remove(name);
    }

    private static void remove(String bootstrap, String group, String instanceId) {
        Properties props = new Properties();
        props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        try (Admin admin = Admin.create(props)) {
            RemoveMembersFromConsumerGroupOptions options =
                    new RemoveMembersFromConsumerGroupOptions(List.of(new MemberToRemove(instanceId)));
            admin.removeMembersFromConsumerGroup(group, options).all().get();
            Map<String, Object> event = Events.event("removed", null);
            event.put("instance", instanceId);
            Events.emit(event);
        } catch (Exception e) {
            Map<String, Object> event = Events.failure("removed", null, e);
            event.put("instance", instanceId);
            Events.emit(event);
        }
    }

    private static final class Member implements ConsumerRebalanceListener {
        final String name;
        final List<String> topics;
        final KafkaConsumer<String, String> consumer;
        final Thread thread;
        volatile boolean stopping;
        private String lastMetadata = "";

        Member(String name, List<String> topics, Properties props) {
            this.name = name;
            this.topics = topics;
            this.consumer = new KafkaConsumer<>(props);
            this.thread = new Thread(this::run, "member-" + name);
        }

        private void run() {
            Events.emit(Events.event("started", name));
            try {
                consumer.subscribe(topics, this);
                while (!stopping) {
                    for (ConsumerRecord<String, String> record : consumer.poll(Duration.ofMillis(100))) {
                        Map<String, Object> event = Events.event("record", name);
                        event.put("topic", record.topic());
                        event.put("partition", record.partition());
                        event.put("offset", record.offset());
                        event.put("key", record.key());
                        event.put("value", record.value());
                        Events.emit(event);
                    }
                    noteMetadata();
                }
            } catch (WakeupException e) {
                // stop: fall through to close()
            } catch (RuntimeException e) {
                Events.emit(Events.failure("error", name, e));
            }
            try {
                consumer.close();
            } catch (RuntimeException e) {
                Events.emit(Events.failure("error", name, e));
            }
            Events.emit(Events.event("closed", name));
        }

        private void noteMetadata() {
            ConsumerGroupMetadata metadata = consumer.groupMetadata();
            String now = metadata.generationId() + "/" + metadata.memberId();
            if (now.equals(lastMetadata)) return;
            lastMetadata = now;
            Events.emit(withMetadata(Events.event("group", name)));
        }

        private Map<String, Object> withMetadata(Map<String, Object> event) {
            ConsumerGroupMetadata metadata = consumer.groupMetadata();
            event.put("generation", metadata.generationId());
            event.put("memberId", metadata.memberId());
            event.put("instance", metadata.groupInstanceId().orElse(null));
            return event;
        }

        private void callback(String kind, Collection<TopicPartition> partitions) {
            Map<String, Object> event = withMetadata(Events.event(kind, name));
            event.put("partitions", Events.partitions(partitions));
            Events.emit(event);
        }

        @Override
        public void onPartitionsRevoked(Collection<TopicPartition> partitions) {
            callback("revoked", partitions);
        }

        @Override
        public void onPartitionsAssigned(Collection<TopicPartition> partitions) {
            callback("assigned", partitions);
        }

        @Override
        public void onPartitionsLost(Collection<TopicPartition> partitions) {
            callback("lost", partitions);
        }
    }
}
