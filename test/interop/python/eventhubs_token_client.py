"""azure-eventhub (Python) with ManagedIdentityCredential against the local Event Hubs peer: the token comes from the
IMDS simulator (AZURE_POD_IDENTITY_AUTHORITY_HOST) and is put on $cbs as a JWT.

Usage: eventhubs_token_client.py HOST HUB CA_PEM
Prints one JSON object (partition ids, what was sent); exits 1 on any error.
"""
import json
import sys
import traceback

from azure.eventhub import EventData, EventHubProducerClient
from azure.identity import ManagedIdentityCredential


def main():
    host, hub, ca_pem = sys.argv[1:4]
    producer = EventHubProducerClient(
        fully_qualified_namespace=host, eventhub_name=hub, credential=ManagedIdentityCredential(),
        connection_verify=ca_pem, retry_total=1)
    with producer:
        partition_ids = producer.get_partition_ids()
        batch = producer.create_batch(partition_key="token-key")
        batch.add(EventData("sent with a managed-identity token"))
        producer.send_batch(batch)
    print(json.dumps({"partition_ids": partition_ids, "sent": 1}))


if __name__ == "__main__":
    try:
        main()
    except Exception as error:  # noqa: BLE001 - report any failure as the test's evidence
        traceback.print_exc()
        print(f"{type(error).__name__}: {error}", file=sys.stderr)
        sys.exit(1)
