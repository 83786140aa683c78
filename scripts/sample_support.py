"""FAQs, support tickets and release notes: short documents full of identifiers (RN-2024-117, E4012, LDG-4471).

Release notes are generated from pools with a seeded RNG, but the fixes that cases ask about are placed by name,
so the generator knows which note answers which question.
"""

from __future__ import annotations

import random

from sample_corpus_base import TENANT_B, Corpus

KB = ["all-staff"]
SUPPORT = ["support", "eng"]

FAQS: dict[str, tuple[str, str, list[str], str, list[tuple[str, str, str]]]] = {
    "faqbill": (
        "faq-billing",
        "Billing and Invoices FAQ",
        KB,
        "ledger-cloud",
        [
            (
                "When are invoices issued?",
                "Ledger Cloud subscriptions are invoiced annually in advance on the contract "
                "start date; usage above the plan's sensor count is invoiced quarterly in arrears.",
                "issued",
            ),
            (
                "What are the payment terms for customers?",
                "Customer invoices are payable within 30 days (net 30) by "
                "bank transfer or card. Enterprise contracts may agree net 60.",
                "terms",
            ),
            (
                "How do I change the billing address or VAT number?",
                "An Owner can update the billing address and VAT "
                "ID under Organisation > Billing. Changes apply to the next invoice.",
                "vat",
            ),
            (
                "Can a customer get a refund after cancelling?",
                "Annual subscriptions are not refunded pro rata. The "
                "subscription stays active until the end of the paid term.",
                "refund",
            ),
        ],
    ),
    "faqled": (
        "faq-ledger",
        "Ledger Cloud FAQ",
        KB,
        "ledger-cloud",
        [
            (
                "How long is sensor data stored?",
                "Raw readings are kept for 13 months on the Business plan and for "
                "5 years on Enterprise; older data is aggregated to hourly values.",
                "history",
            ),
            (
                "Why do I see gaps in my charts?",
                "Gaps mean the gateway did not upload during that time. Readings "
                "buffered on the gateway are back-filled when the uplink returns.",
                "gaps",
            ),
            (
                "Is Ledger Cloud hosted in the EU?",
                "Yes. EU customers are hosted in Frankfurt (eu-central) with a "
                "backup in Dublin; US customers are hosted in Virginia.",
                "hosting",
            ),
            (
                "How do I reset my password?",
                "Use 'Forgot password' on the sign-in page. Organisations with SSO "
                "reset passwords in their identity provider instead.",
                "password",
            ),
        ],
    ),
    "faqbg": (
        "faq-bg200",
        "Beacon Gateway FAQ",
        KB,
        "beacon-gateway",
        [
            (
                "How far can sensors be from the gateway?",
                "Up to 300 m in open space and about 40 m indoors through "
                "two concrete walls. Metal shelving reduces the range further.",
                "range",
            ),
            (
                "Can the gateway run on battery?",
                "No. The BG-200 needs PoE+ or the 24 V adapter; a UPS is recommended for cold-chain sites.",
                "battery",
            ),
            (
                "How do I move a gateway to another site?",
                "Unassign it in Ledger Cloud under Devices, move it, then "
                "claim it again with the claim code. Pairings are kept.",
                "move",
            ),
        ],
    ),
    "faqit": (
        "faq-it-helpdesk",
        "IT Service Desk FAQ",
        KB,
        None,
        [
            (
                "How do I connect to the VPN?",
                "Install GlobalProtect from the Company Portal and connect to "
                "vpn.halvorsen.example. You will be asked for Okta Verify approval.",
                "vpn",
            ),
            (
                "How do I get a new laptop?",
                "Laptops are replaced every four years. Request a replacement in the "
                "service portal under Hardware; a loaner is available within one day.",
                "laptop",
            ),
            (
                "I am locked out of my account, what now?",
                "Call the service desk on extension 2000. After identity "
                "verification the account is unlocked and a temporary password is issued.",
                "lockout",
            ),
            (
                "Which software can I install myself?",
                "Anything in the Company Portal. Other software needs a "
                "request with a business justification and a security review.",
                "software",
            ),
        ],
    ),
    "faqhr": (
        "faq-hr",
        "People and HR FAQ",
        KB,
        None,
        [
            (
                "When is salary paid?",
                "Salaries are paid on the last working day of each month; payslips appear in Workday two days earlier.",
                "payday",
            ),
            (
                "How do I update my bank details?",
                "Update them in Workday under Personal information > Payment "
                "elections before the 15th of the month to take effect the same month.",
                "bank",
            ),
            (
                "Do we have a bike leasing benefit?",
                "Yes, employees in Germany can lease up to two bikes via JobRad through salary conversion.",
                "bike",
            ),
            (
                "Who do I talk to about my pay band?",
                "Your HR business partner can explain your level and band; band tables themselves are confidential.",
                "band",
            ),
        ],
    ),
}

TICKETS = (
    (
        "TCK-18231",
        "Nordkühl Logistik",
        "beacon-gateway",
        "E4012",
        "Gateways at the Hamburg cold store show a red LINK LED and stopped uploading overnight.",
        "The error log shows E4012 on all 12 gateways; the client certificates were issued in 2021 and expired.",
        "Renewed the certificates in bulk from Ledger Cloud > Devices > Certificates; all gateways reconnected.",
    ),
    (
        "TCK-18302",
        "Fresco Foods",
        "beacon-gateway",
        "E4013",
        "After a firewall change, new gateways cannot connect while old ones still work.",
        "New gateways run firmware 3.2 and do not trust the corporate TLS inspection proxy; E4013 in the log.",
        "Customer exempted pool.halvorsen.example and the MQTT endpoint from TLS inspection.",
    ),
    (
        "TCK-18355",
        "Apotheka Retail",
        "beacon-sensor",
        "E3107",
        "Sensors added to the new pharmacy floor never appear in Ledger Cloud.",
        "The gateway already holds 64 paired sensors and reports E3107 when pairing the 65th.",
        "Installed a second BG-200 on the new floor and moved 20 sensors to it.",
    ),
    (
        "TCK-18410",
        "Kühlhaus Süd",
        "beacon-gateway",
        "E5003",
        "Readings arrive with timestamps several minutes in the future.",
        "NTP is blocked by the site firewall; the gateway clock drifted and raised E5003.",
        "Opened UDP 123 outbound; drift corrected within an hour. Fixed permanently by firmware 3.5 fallback to "
        "HTTPS time.",
    ),
    (
        "TCK-18477",
        "Harbor Pharma",
        "ledger-cloud",
        None,
        "SAML sign-in fails with 'audience mismatch' after moving to Entra ID.",
        "The Entra ID application used the old entity ID urn:ledger:eu instead of the organisation-specific one.",
        "Updated the identifier in Entra ID to the value shown under Organisation > Security.",
    ),
    (
        "TCK-18529",
        "Nordkühl Logistik",
        "ledger-cloud",
        None,
        "Export job for 18 months of data fails immediately.",
        "Exports are limited to 13 months per job on the Business plan.",
        "Split the export into two jobs; suggested an Enterprise upgrade for longer history.",
    ),
    (
        "TCK-18588",
        "CityBake",
        "beacon-gateway",
        "E2201",
        "The gateway in the delivery van goes offline every afternoon.",
        "LTE signal drops in an underground loading bay; E2201 after 10 minutes without uplink.",
        "Buffered readings back-fill automatically; customer accepted. Suggested external antenna HB-ANT-LTE5.",
    ),
    (
        "TCK-18640",
        "Fresco Foods",
        "ledger-cloud",
        None,
        "Alert emails arrive 20 minutes late.",
        "A mail relay on the customer side delayed messages; Ledger Cloud sent them on time.",
        "Customer allow-listed alerts@ledger.example; recommended Teams notifications as a second channel.",
    ),
    (
        "TCK-18702",
        "Apotheka Retail",
        "ledger-cloud",
        None,
        "API integration receives 429 errors during nightly sync.",
        "The integration fires 1,400 requests per minute with one token, above the 600 per minute limit.",
        "Customer added Retry-After handling and pagination with next_cursor; sync finishes in 12 minutes.",
    ),
    (
        "TCK-18766",
        "MedCool",
        "beacon-gateway",
        "E6100",
        "Gateway web console warns that storage is almost full.",
        "Debug logging had been left enabled after a support session and filled the flash with logs; E6100.",
        "Disabled debug logging and cleared logs; release RN-2024-117 limits debug logging to 24 hours.",
    ),
    (
        "TCK-18820",
        "Kühlhaus Süd",
        "beacon-sensor",
        None,
        "BS-40 sensors in the freezer report empty batteries after one year.",
        "Sensors were fitted with alkaline cells, which fail at -25 °C; lithium AA cells are required.",
        "Replaced batteries with lithium cells and sent the customer the battery guidance from the user guide.",
    ),
    (
        "TCK-18874",
        "Harbor Pharma",
        "ledger-cloud",
        None,
        "Audit log entries older than a year are missing from the SIEM.",
        "The audit log keeps 400 days; the customer's SIEM connector was set up after older entries expired.",
        "Explained retention; connector now streams continuously.",
    ),
    (
        "TCK-18931",
        "CityBake",
        "beacon-gateway",
        "E4012",
        "One gateway shows E4012 although its certificate was renewed last month.",
        "The gateway clock was reset to 2020 after a power cut without uplink, so the new certificate looked not "
        "yet valid; the device reports this as E4012.",
        "Restored the uplink so NTP could correct the clock; firmware 3.6 reports this case as E5003 instead.",
    ),
    (
        "TCK-19004",
        "MedCool",
        "ledger-cloud",
        None,
        "Customer asks whether webhook payloads can be verified.",
        "Webhooks are signed with HMAC-SHA256 in the X-Relay-Signature header.",
        "Shared the verification snippet from the Relay API reference.",
    ),
)

# (rn number, product, version, date, acl, anchored fixes, anchored features)
RELEASES = (
    (
        101,
        "ledger-cloud",
        "24.1.0",
        "2024-01-09",
        KB,
        ["LDG-4302 Dashboard tiles no longer flicker on Safari"],
        ["Parquet export"],
    ),
    (102, "beacon-gateway", "3.2.0", "2024-01-23", KB, [], ["LTE Cat-M1 fallback to NB-IoT"]),
    (103, "ledger-cloud", "24.2.0", "2024-02-06", KB, ["LDG-4355 CSV export used the wrong time zone"], []),
    (104, "beacon-gateway", "3.2.1", "2024-02-20", KB, ["FW-877 RADIO LED stayed blue after pairing timeout"], []),
    (105, "ledger-cloud", "24.3.0", "2024-03-05", KB, [], ["Microsoft Teams notifications for alert rules"]),
    (106, "ledger-cloud", "24.3.1", "2024-03-12", KB, ["LDG-4410 Alert delay ignored for humidity rules"], []),
    (
        107,
        "beacon-gateway",
        "3.3.0",
        "2024-03-26",
        KB,
        ["FW-902 E3107 raised at 60 instead of 64 sensors"],
        ["Static IP configuration in the local web console"],
    ),
    (108, "ledger-cloud", "24.4.0", "2024-04-09", KB, [], ["Scheduled exports to Azure Blob"]),
    (
        109,
        "beacon-gateway",
        "3.4.0",
        "2024-04-23",
        KB,
        ["FW-931 Certificate renewal failed when proxy required"],
        ["Halvorsen root CA bundle 2024 (fixes E4013 behind TLS inspection)"],
    ),
    (110, "ledger-cloud", "24.5.0", "2024-05-07", KB, ["LDG-4471 SAML just-in-time users got the Operator role"], []),
    (111, "ledger-cloud", "24.5.1", "2024-05-21", KB, [], ["Audit log streaming to SIEM via syslog"]),
    (112, "beacon-gateway", "3.4.1", "2024-06-04", KB, ["FW-955 Gateway rebooted when DHCP lease renewed"], []),
    (
        113,
        "beacon-gateway",
        "3.4.2",
        "2024-06-11",
        ["eng"],
        ["FW-960 Hotfix: local web console accepted default credentials after factory reset (CVE-2024-31882)"],
        [],
    ),
    (114, "ledger-cloud", "24.6.0", "2024-06-25", KB, [], ["Organisation API tokens with up to 365 days validity"]),
    (
        115,
        "ledger-cloud",
        "24.7.0",
        "2024-07-09",
        KB,
        ["LDG-4530 Relay API returned 500 instead of 429"],
        ["Relay API v2 cursor pagination"],
    ),
    (
        116,
        "beacon-gateway",
        "3.5.0",
        "2024-07-23",
        KB,
        ["FW-988 E5003 clock drift: HTTPS time fallback when NTP is blocked"],
        [],
    ),
    (
        117,
        "beacon-gateway",
        "3.5.1",
        "2024-08-06",
        KB,
        ["FW-1002 Debug logging filled flash storage (E6100); debug logging now switches off after 24 hours"],
        [],
    ),
    (
        118,
        "ledger-cloud",
        "24.8.0",
        "2024-08-20",
        ["eng"],
        ["LDG-4602 Internal: tenant isolation check added to export workers after pen-test finding PT-24-07"],
        [],
    ),
    (119, "ledger-cloud", "24.9.0", "2024-09-03", KB, [], ["Webhook signatures with HMAC-SHA256"]),
    (
        120,
        "beacon-gateway",
        "3.6.0",
        "2024-09-17",
        KB,
        ["FW-1031 E4012 shown for a not-yet-valid certificate; now reported as E5003"],
        ["Support for BS-40 firmware 2.1 humidity alarms"],
    ),
)
FEATURE_POOL = {
    "ledger-cloud": (
        "Dark mode for dashboards",
        "Bulk device renaming",
        "Site maps with floor plans",
        "Faster chart rendering for 13-month ranges",
        "German and French UI translations",
        "Alert rule templates for cold rooms",
        "Two-factor prompts in the mobile app",
    ),
    "beacon-gateway": (
        "Per-site maintenance windows",
        "Improved Sub-GHz receiver sensitivity",
        "Configurable LED brightness",
        "Faster boot after power loss",
        "Local buffer usage in the web console",
    ),
}
FIX_POOL = {
    "ledger-cloud": (
        "Sorting by last reading was case-sensitive",
        "Typo in the password reset email",
        "Device list pagination skipped one page",
        "Time zone label missing in PDF reports",
        "Chart legend overlapped on small screens",
        "Slow login when the user belonged to 50+ sites",
    ),
    "beacon-gateway": (
        "Memory leak in the radio driver after 40 days uptime",
        "Pairing beep too quiet on some units",
        "Web console session did not expire",
        "LTE modem not re-registered after roaming",
        "RADIO LED brightness differed between batches",
    ),
}


def faqs(c: Corpus) -> None:
    for alias, (doc_id, title, acl, product, qas) in FAQS.items():
        d = c.new(
            alias,
            doc_id,
            title,
            doc_type="faq",
            source_system="zendesk-guide",
            acl=acl,
            updated_at="2024-08-01T12:00:00",
            version="2024-08",
            product=product,
        )
        for question, answer, key in qas:
            d.section(question).body(f"Q: {question} A: {answer}", key)
    d = c.new(
        "kfaq",
        "kst-faq-it",
        "Kestrel IT Help",
        doc_type="faq",
        source_system="sharepoint-kestrel",
        acl=["kestrel-staff"],
        updated_at="2024-05-02T08:00:00",
        version="1",
        tenant=TENANT_B,
        region="us",
    )
    d.section("How do I connect to the VPN?").body(
        "Q: How do I connect to the VPN? A: Kestrel uses Cisco AnyConnect; connect to vpn.kestrelfreight.example "
        "with your Kestrel account and Duo push.",
        "vpn",
    )
    d.section("How do I reset my password?").body(
        "Q: How do I reset my password? A: Call Kestrel IT on 1-800-555-0142 or use the self-service page on "
        "the intranet.",
        "password",
    )


def tickets(c: Corpus) -> None:
    for i, (tid, customer, product, code, problem, investigation, resolution) in enumerate(TICKETS):
        subject = f"{tid} {customer}: " + (f"error {code}" if code else problem.split(",")[0].rstrip("."))
        d = c.new(
            tid.lower().replace("-", ""),
            f"ticket-{tid}",
            subject,
            doc_type="ticket",
            source_system="zendesk",
            acl=SUPPORT,
            updated_at=f"2024-{1 + i % 9:02d}-{10 + i:02d}T15:{i * 3:02d}:00",
            version="closed",
            product=product,
        )
        d.section("Problem").body(f"Customer {customer} reports: {problem}", "problem")
        d.section("Investigation").body(investigation, "investigation")
        d.section("Resolution").body(resolution, "resolution")


def releases(c: Corpus, rng: random.Random) -> None:
    names = {"ledger-cloud": "Ledger Cloud", "beacon-gateway": "BG-200 firmware"}
    prefix = {"ledger-cloud": ("LDG", 4300, 4650), "beacon-gateway": ("FW", 870, 1040)}
    used = {f.split()[0] for r in RELEASES for f in r[5]}
    for num, product, version, date, acl, fixes, features in RELEASES:
        rn = f"RN-2024-{num}"
        d = c.new(
            f"rn{num}",
            f"rn-2024-{num}",
            f"{rn} {names[product]} {version}",
            doc_type="release_note",
            source_system="github-releases",
            acl=acl,
            updated_at=f"{date}T17:00:00",
            version=version,
            product=product,
        )
        d.section(f"{rn}: {names[product]} {version} (released {date})", "head").body(
            f"Release {rn} delivers {names[product]} {version}. "
            + (
                "The update is rolled out to all organisations over three days."
                if product == "ledger-cloud"
                else "Gateways update over the air during their maintenance window; the previous image is kept."
            ),
            "summary",
        )
        new = list(features) + rng.sample(FEATURE_POOL[product], 2 - min(len(features), 1))
        d.items(new, "features", "New features:")
        fixed = list(fixes)
        for text in rng.sample(FIX_POOL[product], 2):
            tag, lo, hi = prefix[product]
            bug = f"{tag}-{rng.randint(lo, hi)}"
            while bug in used:
                bug = f"{tag}-{rng.randint(lo, hi)}"
            used.add(bug)
            fixed.append(f"{bug} {text}")
        d.items(fixed, "fixes", "Fixed issues:")


def build(c: Corpus, rng: random.Random) -> None:
    faqs(c)
    tickets(c)
    releases(c, rng)
