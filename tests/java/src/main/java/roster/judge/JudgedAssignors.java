package roster.judge;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerGroupMetadata;
import org.apache.kafka.clients.consumer.ConsumerPartitionAssignor;
import org.apache.kafka.clients.consumer.ConsumerPartitionAssignor.GroupSubscription;
import org.apache.kafka.clients.consumer.ConsumerPartitionAssignor.Subscription;
import org.apache.kafka.clients.consumer.CooperativeStickyAssignor;
import org.apache.kafka.clients.consumer.RangeAssignor;
import org.apache.kafka.common.Cluster;
import org.apache.kafka.common.Configurable;

/**
 * Kafka's own assignors (same names, so they mix with plain members), which also print an
 * "assign" event whenever this member computes the group's assignment: who leads, and every
 * subscription as the broker handed it over (owned partitions and KIP-792's generation).
 */
final class JudgedAssignors {
    private JudgedAssignors() {}

    static void report(String member, GroupSubscription group) {
        Map<String, Object> event = Events.event("assign", member);
        Map<String, Object> subscriptions = new TreeMap<>();
        for (Map.Entry<String, Subscription> entry : group.groupSubscription().entrySet()) {
            Subscription s = entry.getValue();
            Map<String, Object> seen = new TreeMap<>();
            seen.put("instance", s.groupInstanceId().orElse(null));
            seen.put("owned", Events.partitions(s.ownedPartitions()));
            seen.put("generation", s.generationId().orElse(-1));
            seen.put("topics", new ArrayList<>(s.topics()));
            subscriptions.put(entry.getKey(), seen);
        }
        event.put("subscriptions", subscriptions);
        Events.emit(event);
    }

    static String clientId(Map<String, ?> configs) {
        Object id = configs.get(ConsumerConfig.CLIENT_ID_CONFIG);
        return id == null ? null : id.toString();
    }

    /**
     * Kafka's assignor `delegate`, doing all the work, and reporting its input when it leads.
     * (Composition, not inheritance: the two assignors have different base classes.)
     */
    abstract static class Judging implements ConsumerPartitionAssignor, Configurable {
        private final ConsumerPartitionAssignor delegate;
        private String member;

        Judging(ConsumerPartitionAssignor delegate) {
            this.delegate = delegate;
        }

        @Override
        public void configure(Map<String, ?> configs) {
            member = clientId(configs);
        }

        @Override
        public GroupAssignment assign(Cluster metadata, GroupSubscription group) {
            report(member, group);
            return delegate.assign(metadata, group);
        }

        @Override
        public ByteBuffer subscriptionUserData(Set<String> topics) {
            return delegate.subscriptionUserData(topics);
        }

        @Override
        public void onAssignment(Assignment assignment, ConsumerGroupMetadata metadata) {
            delegate.onAssignment(assignment, metadata);
        }

        @Override
        public List<RebalanceProtocol> supportedProtocols() {
            return delegate.supportedProtocols();
        }

        @Override
        public short version() {
            return delegate.version();
        }

        @Override
        public String name() {
            return delegate.name();
        }
    }

    /** partition.assignment.strategy=roster.judge.JudgedAssignors$CooperativeSticky */
    public static final class CooperativeSticky extends Judging {
        public CooperativeSticky() {
            super(new CooperativeStickyAssignor());
        }
    }

    /** partition.assignment.strategy=roster.judge.JudgedAssignors$Range */
    public static final class Range extends Judging {
        public Range() {
            super(new RangeAssignor());
        }
    }
}
