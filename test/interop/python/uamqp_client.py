"""Microsoft's uamqp (the C AMQP stack, Debian's python3-uamqp) against the local Event Hubs peer.

Usage: uamqp_client.py HOST HUB KEY_NAME KEY CA_PEM KEYED_PARTITION (where the peer puts partition key "vm-7")
Debian bookworm pairs azure-eventhub 5.11 with uamqp 1.5.3, older than the 1.6.3 that client's uamqp transport needs
(its management calls read `Message.value`), so this drives uamqp itself the way that transport does: SAS put-token on
$cbs, a $management READ, a keyed batch, a single message to a partition, and receives with selector filters.
Prints one JSON object; exits 1 on any error. Every call has a timeout.
"""
import json
import traceback
import sys

import uamqp
from uamqp import AMQPClient, BatchMessage, Message, ReceiveClient, SendClient, authentication
from uamqp.address import Source

TIMEOUT_MS = 15000


def text(value):
    return value.decode() if isinstance(value, bytes) else value


def decoded(mapping):
    return {text(k): (decoded(v) if isinstance(v, dict) else [text(i) for i in v] if isinstance(v, list) else text(v))
            for k, v in mapping.items()}


def main():
    host, hub, key_name, key, ca_pem, keyed_partition = sys.argv[1:7]
    uri = f"sb://{host}/{hub}"

    def auth():
        return authentication.SASTokenAuth.from_shared_access_key(uri, key_name, key, verify=ca_pem, timeout=TIMEOUT_MS / 1000)

    result = {"uamqp_version": uamqp.__version__}
    with AMQPClient(f"amqps://{host}/{hub}", auth=auth()) as management:
        request = Message(application_properties={b"name": hub.encode()})
        response = management.mgmt_request(
            request, b"READ", op_type=b"com.microsoft:eventhub", node=b"$management",
            status_code_field=b"status-code", description_fields=b"status-description", timeout=TIMEOUT_MS)
        result["hub"] = {k: v for k, v in decoded(response.get_data()).items() if k != "created_at"}

    keyed = BatchMessage(data=[f"u-keyed-{i}".encode() for i in range(3)], multi_messages=False)
    keyed.annotations = {b"x-opt-partition-key": b"vm-7"}
    single = Message(b"u-single", application_properties={b"Kind": b"single"})
    with SendClient(f"amqps://{host}/{hub}", auth=auth(), msg_timeout=TIMEOUT_MS) as sender:
        sender.queue_message(keyed)
        result["keyed_batch"] = [str(state) for state in sender.send_all_messages(close_on_done=False)]
    with SendClient(f"amqps://{host}/{hub}/Partitions/1", auth=auth(), msg_timeout=TIMEOUT_MS) as sender:
        sender.queue_message(single)
        result["single"] = [str(state) for state in sender.send_all_messages(close_on_done=False)]

    def receive(partition, selector, want):
        source = Source(f"amqps://{host}/{hub}/ConsumerGroups/$Default/Partitions/{partition}")
        source.set_filter(selector)
        got = []
        with ReceiveClient(source, auth=auth(), timeout=TIMEOUT_MS, prefetch=50) as receiver:
            while len(got) < want:
                batch = receiver.receive_message_batch(max_batch_size=want - len(got), timeout=TIMEOUT_MS)
                if not batch:
                    break
                for message in batch:
                    annotations = decoded(message.annotations or {})
                    got.append({
                        "body": b"".join(message.get_data()).decode(),
                        "sequence_number": annotations.get("x-opt-sequence-number"),
                        "offset": annotations.get("x-opt-offset"),
                        "partition_key": annotations.get("x-opt-partition-key"),
                        "properties": decoded(message.application_properties or {}),
                    })
        return got

    result["partition1_earliest"] = receive(1, b"amqp.annotation.x-opt-offset > '-1'", 1)
    result["keyed_from_sequence_1"] = receive(keyed_partition, b"amqp.annotation.x-opt-sequence-number >= '1'", 2)
    print(json.dumps(result, default=str))


if __name__ == "__main__":
    try:
        main()
    except Exception as error:  # noqa: BLE001 - report any failure as the test's evidence
        traceback.print_exc()
        print(f"{type(error).__name__}: {error}", file=sys.stderr)
        sys.exit(1)
