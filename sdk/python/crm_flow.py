"""The CRM flow, driven by the Python client that openapi-python-client generates from the
document the gateway serves (test/e2e/python-client.e2e.test.ts generates it, then runs this):
proof that the document serves other languages as it is. Prints what it saw as one JSON line.

    python crm_flow.py <base url> <live key> <campaign id>
"""

import json
import sys

from voiceapi_client import AuthenticatedClient
from voiceapi_client.api.campaigns import get_campaign, list_campaign_contacts
from voiceapi_client.api.core import get_ping
from voiceapi_client.api.credits_ import get_credits
from voiceapi_client.api.leads import create_lead_batch
from voiceapi_client.models import Error, LeadBatch


def main(base_url: str, key: str, campaign_id: str) -> dict:
    client = AuthenticatedClient(base_url=base_url, token=key, raise_on_unexpected_status=True)
    ping = get_ping.sync(client=client)

    # Three leads with the CRM's own ids; the third lacks consent and is refused on its own.
    consent = {"outboundCall": True, "source": "python crm"}
    batch = LeadBatch.from_dict(
        {
            "campaignId": campaign_id,
            "leads": [
                {"externalId": "py-1", "phone": "+14155550131", "name": "Ada", "channel": "call", "consent": consent},
                {"externalId": "py-2", "phone": "+14155550132", "name": "Alan", "channel": "call", "consent": consent},
                {"externalId": "py-3", "phone": "+14155550133", "name": "Grace", "channel": "call"},
            ],
        }
    )
    first = create_lead_batch.sync(client=client, body=batch, idempotency_key="py-sync-1")
    # The nightly sync sends the same leads again: nothing is ingested twice.
    again = create_lead_batch.sync(client=client, body=batch)

    contacts = []
    page = 1
    while True:
        listed = list_campaign_contacts.sync(client=client, id=campaign_id, page=page, limit=100)
        contacts += [f"{c.external_id}: {c.status.value}" for c in listed.contacts]
        if not listed.pagination.has_more:
            break
        page += 1

    credits = get_credits.sync(client=client)
    missing = get_campaign.sync(client=client, id="000000000000000000000000")
    return {
        "mode": ping.mode.value,
        "accepted": first.accepted,
        "refusals": [f"{r.external_id}: {r.reason_code}" for r in first.results if r.status.value == "refused"],
        "duplicates": sum(1 for r in again.results if r.duplicate is True),
        "contacts": sorted(contacts),
        "balance": credits.balance,
        "missingCampaign": missing.reason_code if isinstance(missing, Error) else None,
    }


if __name__ == "__main__":
    print(json.dumps(main(*sys.argv[1:4])))
