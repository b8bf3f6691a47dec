# The reference loop of the idle bench (idle-vs-python.ts): what Microsoft's documented Python sample does each second
# (GET /metadata/scheduledevents with `Metadata: true`, parse the JSON, compare the incarnation, act on nothing), with
# the standard library only. `new-connection` (default) opens a connection per request, as the documented sample's
# requests.get() without a Session does; `keepalive` reuses one connection, like the agent (a stricter reference).
import http.client
import json
import sys
import time
from urllib.parse import urlsplit

base, mode = sys.argv[1], (sys.argv[2] if len(sys.argv) > 2 else "new-connection")
url = urlsplit(base)
path = "/metadata/scheduledevents?api-version=2020-07-01"
headers = {"Metadata": "true"}
connection = None
last_incarnation = -1

while True:
    try:
        if connection is None or mode == "new-connection":
            if connection is not None:
                connection.close()
            connection = http.client.HTTPConnection(url.hostname, url.port, timeout=10)
        connection.request("GET", path, headers=headers)
        response = connection.getresponse()
        document = json.loads(response.read())
        if document["DocumentIncarnation"] != last_incarnation:
            last_incarnation = document["DocumentIncarnation"]
    except (OSError, http.client.HTTPException, ValueError):
        connection = None
    time.sleep(1)
