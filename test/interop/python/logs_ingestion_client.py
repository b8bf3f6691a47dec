"""Microsoft's Python LogsIngestionClient with ManagedIdentityCredential (Debian's python3-azure) against the local
IMDS simulator (tokens) and the local Logs Ingestion peer (HTTPS, CA from REQUESTS_CA_BUNDLE).

Usage: logs_ingestion_client.py ENDPOINT RULE_ID STREAM ROWS_JSON_FILE [CLIENT_ID]
The IMDS address comes from AZURE_POD_IDENTITY_AUTHORITY_HOST. azure-monitor-ingestion 1.0.0b2 (Debian bookworm)
defaults to the preview api-version and a "user_impersonation" scope, so the Monitor scope is passed explicitly, as
the released client does by default. Prints one JSON object with the upload outcome; exits 1 on an unexpected error.
"""
import json
import sys
import traceback

from azure.core.exceptions import HttpResponseError
from azure.identity import ManagedIdentityCredential
from azure.monitor.ingestion import LogsIngestionClient


def main():
    endpoint, rule_id, stream, rows_file = sys.argv[1:5]
    client_id = sys.argv[5] if len(sys.argv) > 5 else None
    with open(rows_file, encoding="utf-8") as handle:
        rows = json.load(handle)
    credential = ManagedIdentityCredential(client_id=client_id) if client_id else ManagedIdentityCredential()
    client = LogsIngestionClient(
        endpoint, credential, credential_scopes=["https://monitor.azure.com/.default"], retry_total=0, logging_enable=False)
    failures = []

    def on_error(error, chunk):
        failures.append({"status": getattr(error, "status_code", None), "code": getattr(getattr(error, "error", None), "code", None), "rows": len(chunk)})

    with client:
        client.upload(rule_id=rule_id, stream_name=stream, logs=rows, on_error=on_error)
    print(json.dumps({"uploaded": len(rows), "failures": failures}))


if __name__ == "__main__":
    try:
        main()
    except HttpResponseError as error:
        print(json.dumps({"error": {"status": error.status_code, "message": str(error.message)}}))
    except Exception as error:  # noqa: BLE001 - report any failure as the test's evidence
        traceback.print_exc()
        print(f"{type(error).__name__}: {error}", file=sys.stderr)
        sys.exit(1)
