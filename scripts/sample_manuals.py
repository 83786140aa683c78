"""Product manuals and datasheets: long documents with headings, tables and error-code lists.

The BG-200 manual is large on purpose (it tends to dominate rankings) and keeps its answers in tables, which the
simulated PDF parser drops; the German installation guide near-duplicates parts of the English one.
"""

from __future__ import annotations

from sample_corpus_base import TENANT_B, Corpus

KB = ["all-staff"]
ERRORS = (
    ("E4012", "Client certificate expired", "Renew the device certificate in Ledger Cloud > Devices > Certificates"),
    ("E4013", "Certificate chain not trusted", "Install the Halvorsen root CA bundle 2024 via firmware 3.4 or later"),
    ("E2201", "Uplink lost for more than 10 minutes", "Check the Ethernet cable or the LTE antenna and APN"),
    ("E3107", "Sensor pairing table full (64 sensors)", "Unpair unused sensors or add a second gateway"),
    ("E5003", "Clock drift exceeds 2 seconds", "Allow NTP (UDP 123) to pool.halvorsen.example"),
    ("E6100", "Flash storage nearly full", "Reduce the local buffer in Settings > Storage or export and clear logs"),
)


def bg200(c: Corpus) -> None:
    d = c.new(
        "bg",
        "man-bg200",
        "Beacon Gateway BG-200 Installation and Operation Manual",
        doc_type="manual",
        source_system="sharepoint",
        acl=KB,
        updated_at="2024-05-28T10:00:00",
        version="3.4",
        product="beacon-gateway",
    )
    d.section("1. Overview", "overview").body(
        "The Beacon Gateway BG-200 (SKU HB-GW200-EU and HB-GW200-US) collects readings from up to 64 Beacon "
        "sensors over Sub-GHz radio and forwards them to Ledger Cloud over Ethernet or LTE.",
        "overview",
    )
    d.section("2. In the box").items(
        [
            "BG-200 gateway",
            "Wall and DIN-rail mounting bracket",
            "2 dBi Sub-GHz antenna",
            "LTE antenna",
            "Quick start card with the device claim code",
        ],
        "box",
    )
    d.section("3. Mounting", "mounting").body(
        "Mount the gateway vertically with the antenna connectors facing up, at least 1.5 m above the floor and "
        "away from metal cabinets, which shorten radio range. The housing is rated IP65 for outdoor use.",
        "mounting",
    )
    d.section("4. Power supply", "power").body(
        "Power the gateway with Power over Ethernet (IEEE 802.3at, PoE+) or with the optional 24 V DC adapter "
        "(SKU HB-PSU24). Typical consumption is 6 W; peak consumption with LTE active is 11 W.",
        "power",
    )
    d.section("5. Status LEDs", "led").body(
        "The front panel has three LEDs: POWER, LINK and RADIO. Their colour and blink pattern show the state of "
        "the gateway.",
        "led_intro",
    )
    d.table(
        ["LED", "Pattern", "Meaning"],
        [
            ["LINK", "solid green", "Connected to Ledger Cloud"],
            ["LINK", "blinking amber", "No uplink; retrying"],
            ["LINK", "solid red", "Certificate or authentication error (see error log)"],
            ["RADIO", "blinking blue", "Pairing mode active"],
            ["POWER", "blinking red", "Supply voltage too low"],
        ],
        "led_table",
        "LED patterns",
    )
    d.section("6. Network configuration", "network").body(
        "By default the gateway obtains an address via DHCP. A static IP address, proxy and VLAN tag can be set "
        "in the local web console at https://192.168.50.1 (reachable over the service port). Outbound TCP 443 "
        "and UDP 123 must be open.",
        "network",
    )
    d.section("7. Pairing sensors", "pairing").body(
        "Press the RADIO button for three seconds until the RADIO LED blinks blue, then insert the battery of the "
        "sensor. Pairing mode ends after 120 seconds. A gateway holds at most 64 paired sensors.",
        "pairing",
    )
    d.section("8. Firmware updates", "fw").body(
        "Firmware updates are delivered over the air from Ledger Cloud during the maintenance window you set per "
        "site. The gateway keeps the previous image and rolls back automatically if the new firmware fails to "
        "connect within 15 minutes.",
        "fw",
    )
    d.section("9. Factory reset", "reset").body(
        "To restore factory settings, hold the recessed RESET button for 10 seconds until all LEDs flash white. "
        "A reset deletes network settings and pairings but keeps the device certificate.",
        "reset",
    )
    d.section("10. Technical specifications", "specs").table(
        ["Parameter", "Value"],
        [
            ["Operating temperature", "-20 °C to +60 °C"],
            ["Ingress protection", "IP65"],
            ["Dimensions", "180 x 120 x 45 mm"],
            ["Weight", "640 g"],
            ["Radio", "868 MHz (EU) / 915 MHz (US)"],
            ["Cellular", "LTE Cat-M1 / NB-IoT"],
            ["Local buffer", "14 days of readings at 1-minute interval"],
        ],
        "specs_table",
    )
    d.section("11. Error codes", "errors").body(
        "Error codes are shown in the local web console and in Ledger Cloud under Device health. Each code "
        "begins with E followed by four digits.",
        "errors_intro",
    )
    d.table(["Code", "Meaning", "Action"], [list(e) for e in ERRORS], "error_table", "Gateway error codes")
    d.section("12. Warranty and returns", "warranty").body(
        "The BG-200 carries a 3-year limited warranty. For a defective unit open a return merchandise "
        "authorization through the support portal; replacements ship within two business days.",
        "warranty",
    )

    d = c.new(
        "bgde",
        "man-bg200-de",
        "Beacon Gateway BG-200 Installationsanleitung",
        doc_type="manual",
        source_system="sharepoint",
        acl=KB,
        updated_at="2024-05-30T10:00:00",
        version="3.4",
        language="de",
        region="de",
        product="beacon-gateway",
    )
    d.section("1. Montage").body(
        "Montieren Sie das Gateway senkrecht mit den Antennenanschlüssen nach oben, mindestens 1,5 m über dem "
        "Boden und nicht in Metallschränken. Das Gehäuse erfüllt die Schutzart IP65.",
        "mounting",
    )
    d.section("2. Stromversorgung").body(
        "Die Versorgung erfolgt über Power over Ethernet (PoE+, IEEE 802.3at) oder das optionale 24-V-Netzteil "
        "HB-PSU24. Die typische Leistungsaufnahme beträgt 6 W.",
        "power",
    )
    d.section("3. Werkseinstellungen").body(
        "Halten Sie die versenkte RESET-Taste 10 Sekunden gedrückt, bis alle LEDs weiß blinken. Netzwerk- und "
        "Sensorkopplungen werden gelöscht, das Gerätezertifikat bleibt erhalten.",
        "reset",
    )
    d.section("4. Fehlercodes").body(
        "Fehler E4012 bedeutet, dass das Client-Zertifikat abgelaufen ist; erneuern Sie es in Ledger Cloud unter "
        "Geräte > Zertifikate. Fehler E2201 meldet einen Verbindungsverlust von mehr als 10 Minuten.",
        "errors",
    )

    d = c.new(
        "ds",
        "ds-bg200",
        "BG-200 Datasheet",
        doc_type="manual",
        source_system="sharepoint",
        acl=KB,
        updated_at="2024-04-02T10:00:00",
        version="2024-04",
        product="beacon-gateway",
    )
    d.section("Ordering information").table(
        ["SKU", "Description", "List price (EUR)"],
        [
            ["HB-GW200-EU", "BG-200 gateway, 868 MHz, EU plug", "489"],
            ["HB-GW200-US", "BG-200 gateway, 915 MHz", "499"],
            ["HB-PSU24", "24 V DC power adapter", "39"],
            ["HB-ANT-LTE5", "5 dBi LTE antenna with 3 m cable", "59"],
            ["HB-BS40-T", "Beacon Sensor BS-40 temperature", "79"],
        ],
        "skus",
    )
    d.section("Certifications").body(
        "CE, UKCA, FCC Part 15 and IC certified. The LTE module is certified for AT&T, Verizon and Deutsche "
        "Telekom networks.",
        "certs",
    )


def bs40(c: Corpus) -> None:
    d = c.new(
        "bs",
        "man-bs40",
        "Beacon Sensor BS-40 User Guide",
        doc_type="manual",
        source_system="sharepoint",
        acl=KB,
        updated_at="2024-02-19T10:00:00",
        version="2.1",
        product="beacon-sensor",
    )
    d.section("1. About the sensor").body(
        "The BS-40 is a wireless temperature and humidity sensor for cold rooms, warehouses and reefers. It "
        "reports every minute to a Beacon Gateway within 300 m line of sight.",
        "about",
    )
    d.section("2. Battery", "battery").body(
        "The sensor runs on two AA lithium cells (3.6 V). At a one-minute reporting interval battery life is "
        "about 4 years at room temperature and 2.5 years at -25 °C.",
        "battery",
    )
    d.section("3. Calibration", "calibration").body(
        "Each BS-40 is factory calibrated to ±0.3 °C. Re-calibration is recommended every 24 months for "
        "pharmaceutical storage (GDP) and can be ordered as service SKU HB-CAL-BS40.",
        "calibration",
    )
    d.section("4. Measuring range").table(
        ["Quantity", "Range", "Accuracy"],
        [["Temperature", "-40 °C to +85 °C", "±0.3 °C"], ["Relative humidity", "0 to 100 %", "±2 %"]],
        "range",
    )
    d.section("5. Mounting in cold rooms").body(
        "Place the sensor at shoulder height away from the evaporator fan and doors. Do not mount it directly "
        "on metal walls; use the supplied spacer.",
        "coldroom",
    )


def ledger(c: Corpus) -> None:
    d = c.new(
        "adm",
        "man-ledger-admin",
        "Ledger Cloud Administrator Guide",
        doc_type="manual",
        source_system="sharepoint",
        acl=KB,
        updated_at="2024-07-08T09:00:00",
        version="24.7",
        product="ledger-cloud",
    )
    d.section("1. Single sign-on", "sso").body(
        "Ledger Cloud supports SAML 2.0 identity providers such as Okta, Entra ID and Google Workspace. Upload "
        "the IdP metadata XML under Organisation > Security > Identity provider and map the email attribute. "
        "Users created through just-in-time provisioning receive the Viewer role.",
        "sso",
    )
    d.section("2. Roles and permissions", "roles").table(
        ["Role", "View dashboards", "Acknowledge alerts", "Edit alert rules", "Manage users", "Billing"],
        [
            ["Viewer", "yes", "no", "no", "no", "no"],
            ["Operator", "yes", "yes", "no", "no", "no"],
            ["Admin", "yes", "yes", "yes", "yes", "no"],
            ["Owner", "yes", "yes", "yes", "yes", "yes"],
        ],
        "roles_table",
    )
    d.section("3. API tokens", "tokens").body(
        "Personal API tokens are created under Profile > API tokens and expire after 90 days. Organisation "
        "tokens for integrations can be set to expire after up to 365 days and are shown only once.",
        "tokens",
    )
    d.section("4. Alert rules", "alerts").body(
        "An alert rule fires when a sensor reading stays outside its threshold for the configured delay (default "
        "5 minutes). Notifications go to email, SMS, Microsoft Teams or a webhook. Each organisation can define "
        "up to 500 rules.",
        "alerts",
    )
    d.section("5. Data export", "export").body(
        "Readings can be exported as CSV or Parquet for any range up to 13 months. Scheduled exports deliver "
        "daily files to an S3 bucket or Azure Blob container.",
        "export",
    )
    d.section("6. Audit log", "audit").body(
        "The audit log records sign-ins, role changes, rule edits and exports. Entries are kept for 400 days and "
        "can be streamed to a SIEM through the syslog connector.",
        "audit",
    )
    d.section("7. Plans and limits", "plans").table(
        ["Plan", "Sites", "Sensors", "Data history", "Support"],
        [
            ["Starter", "1", "50", "3 months", "email"],
            ["Business", "20", "2,000", "13 months", "business hours"],
            ["Enterprise", "unlimited", "unlimited", "5 years", "24/7 with 1 h SEV1 response"],
        ],
        "plans_table",
    )

    d = c.new(
        "api",
        "man-relay-api",
        "Relay API Reference",
        doc_type="manual",
        source_system="sharepoint",
        acl=KB,
        updated_at="2024-08-19T09:00:00",
        version="v2",
        product="ledger-cloud",
    )
    d.section("1. Authentication", "auth").body(
        "Every request carries an API token in the header 'Authorization: Bearer <token>'. Tokens are scoped to "
        "one organisation; requests with a token of another organisation return 403.",
        "auth",
    )
    d.section("2. Rate limits", "rate").body(
        "The Relay API allows 600 requests per minute per token and 20 concurrent requests. When the limit is "
        "exceeded the API answers 429 Too Many Requests with a Retry-After header in seconds.",
        "rate",
    )
    d.section("3. Pagination", "paging").body(
        "List endpoints return at most 500 items per page. Follow the 'next_cursor' value until it is null; "
        "cursors stay valid for 10 minutes.",
        "paging",
    )
    d.section("4. Endpoints", "endpoints").table(
        ["Method", "Path", "Purpose"],
        [
            ["GET", "/v2/sites", "List sites"],
            ["GET", "/v2/devices/{id}/readings", "Readings of one device"],
            ["POST", "/v2/alert-rules", "Create an alert rule"],
            ["DELETE", "/v2/devices/{id}", "Decommission a device"],
            ["POST", "/v2/exports", "Start an asynchronous export"],
        ],
        "endpoints_table",
    )
    d.section("5. Webhooks", "webhooks").body(
        "Webhook deliveries are signed with HMAC-SHA256 in the X-Relay-Signature header. Failed deliveries are "
        "retried with exponential backoff for up to 24 hours.",
        "webhooks",
    )

    d = c.new(
        "mob",
        "man-ledger-mobile",
        "Ledger Mobile App Guide",
        doc_type="manual",
        source_system="sharepoint",
        acl=KB,
        updated_at="2024-06-21T09:00:00",
        version="5.2",
        product="ledger-cloud",
    )
    d.section("1. Installing the app").body(
        "Ledger Mobile is available for iOS 16 and Android 11 or later. Sign in with your organisation's SSO.",
        "install",
    )
    d.section("2. Push notifications").body(
        "Alerts arrive as push notifications; critical alerts can bypass Do Not Disturb if you allow it in the "
        "app's notification settings.",
        "push",
    )
    d.section("3. Offline mode").body(
        "The app caches the last 24 hours of readings for your favourite sites so they can be viewed without a "
        "connection.",
        "offline",
    )


def fleet(c: Corpus) -> None:
    d = c.new(
        "fleet",
        "kst-man-fleet",
        "Kestrel Fleet Telematics Handbook",
        doc_type="manual",
        source_system="sharepoint-kestrel",
        acl=["kestrel-staff"],
        updated_at="2024-04-30T08:00:00",
        version="2",
        tenant=TENANT_B,
        region="us",
        product="beacon-gateway",
    )
    d.section("1. Gateways in trucks").body(
        "Every Kestrel tractor carries a BG-200 gateway (SKU HB-GW200-US) powered from the 24 V cab supply. "
        "Reefer trailers carry two BS-40 sensors each.",
        "trucks",
    )
    d.section("2. Reefer temperature alarms").body(
        "Dispatch receives a Ledger Cloud alert when a reefer reading stays above +5 °C for 10 minutes. The "
        "driver must stop at the next safe place and check the unit.",
        "reefer",
    )
    d.section("3. Gateway offline on the road").body(
        "If the gateway shows error E2201 on the road, the LTE antenna on the cab roof is usually loose. Report "
        "it in the DVIR; readings are buffered for up to 14 days.",
        "offline",
    )


def build(c: Corpus) -> None:
    for part in (bg200, bs40, ledger, fleet):
        part(c)
