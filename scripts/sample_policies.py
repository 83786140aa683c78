"""Policy documents of the fictional Halvorsen Instruments and its subsidiary Kestrel Freight.

Versioned policies keep an archived predecessor with different figures, so a retriever that ignores effective
dates returns a plausible but wrong answer; the Kestrel copies reuse the same vocabulary with other numbers, so
a retriever without a tenant filter finds relevant-looking evidence the user may not see.
"""

from __future__ import annotations

from sample_corpus_base import TENANT_B, Corpus

STAFF = ["all-staff"]


def travel(c: Corpus) -> None:
    for alias, ver, status, start, end, hotel, mileage, vp, days in (
        ("travel23", "2023.1", "archived", "2023-01-01", "2023-12-31", "150", "0.30", "3,000", "45"),
        ("travel24", "2024.1", "current", "2024-01-01", None, "170", "0.35", "5,000", "30"),
    ):
        d = c.new(
            alias,
            f"pol-travel-{ver[:4]}",
            f"Travel and Expense Policy ({ver[:4]})",
            doc_type="policy",
            source_system="confluence",
            acl=STAFF,
            updated_at=f"{start}T08:00:00",
            version=ver,
            status=status,
            effective_from=start,
            effective_to=end,
        )
        d.section("1. Scope and purpose", "scope").body(
            "This policy applies to all employees of Halvorsen Instruments travelling on company business. It sets "
            "out how trips are booked, which costs the company reimburses and how expense reports are approved. "
            f"It is valid from {start}" + (f" until {end}." if end else " until replaced."),
            "scope",
        )
        d.section("2. Booking travel", "booking").body(
            "All flights, rail tickets and hotels must be booked through TravelDesk, the company's travel agency "
            "portal. Book at least 14 days before departure where possible. Economy class is the standard for "
            "flights under six hours; premium economy may be booked for longer flights.",
            "booking",
        )
        d.section("3. Hotel accommodation", "hotel").body(
            f"The accommodation ceiling is EUR {hotel} per night including breakfast and taxes. In the cities "
            "listed in Annex A a higher ceiling applies. Rooms above the ceiling need written approval from your "
            "cost-centre manager before booking.",
            "hotel",
        )
        d.table(
            ["City", "Ceiling per night (EUR)"],
            [
                ["London", str(int(hotel) + 90)],
                ["Paris", str(int(hotel) + 60)],
                ["New York", str(int(hotel) + 130)],
                ["Munich", str(int(hotel) + 40)],
                ["Zurich", str(int(hotel) + 110)],
            ],
            "hotel_cities",
            "Annex A: cities with a higher accommodation ceiling",
        )
        d.section("4. Meals and daily allowance", "meals").body(
            "Instead of receipts for meals, employees receive a daily allowance (per diem) that depends on the "
            "destination country. Days of departure and return count at 80 percent. Meals provided by a host, "
            "conference or airline reduce the allowance.",
            "meals",
        )
        base = 52 if alias == "travel23" else 56
        d.table(
            ["Country", "Full day (EUR)", "Departure/return day (EUR)"],
            [
                [k, str(base + o), str(round((base + o) * 0.8))]
                for k, o in (
                    ("Germany", -24),
                    ("France", 0),
                    ("United Kingdom", 6),
                    ("United States", 14),
                    ("Japan", 10),
                )
            ],
            "perdiem_table",
            "Daily allowance by country",
        )
        d.section("5. Private car use", "car").body(
            f"Use of a private car for business trips is reimbursed at EUR {mileage} per kilometre. Parking and "
            "tolls are reimbursed against receipts. Fines are never reimbursed.",
            "mileage",
        )
        d.section("6. Approval and expense reports", "approval").body(
            f"Trips with an estimated total cost above EUR {vp} require approval by the vice president of the "
            f"department. Expense reports must be submitted in Spendly within {days} days of the trip's end, with "
            "itemised receipts for every cost above EUR 25.",
            "approval",
        )
        if alias == "travel23":
            d.section("7. Rail cards").body(
                "Employees who travel by train at least twice a month can have a BahnCard 50 second class "
                "reimbursed once a year.",
                "bahncard",
            )


def remote(c: Corpus) -> None:
    d = c.new(
        "remote22",
        "pol-remote-2022",
        "Remote Work Policy (2022)",
        doc_type="policy",
        source_system="confluence",
        acl=STAFF,
        updated_at="2022-02-20T09:30:00",
        version="2022.2",
        status="archived",
        effective_from="2022-03-01",
        effective_to="2023-12-31",
    )
    d.section("1. Eligibility").body(
        "Employees whose role can be performed away from the office may work from home up to three days per "
        "week after agreement with their manager.",
        "eligibility",
    )
    d.section("2. Home office equipment").body(
        "The company pays a one-off home office allowance of EUR 500 for a desk, chair or monitor. In addition "
        "a monthly broadband allowance of EUR 30 is paid with the salary.",
        "stipend",
    )
    d.section("3. Working hours").body(
        "Core hours are 10:00 to 16:00 local time; outside core hours you may arrange your working time freely.", "core"
    )
    d.section("4. Coworking spaces").body(
        "Employees living more than 50 km from an office may expense a coworking membership of up to EUR 150 per "
        "month.",
        "coworking",
    )
    d = c.new(
        "remote24",
        "pol-remote-2024",
        "Remote and Hybrid Work Policy",
        doc_type="policy",
        source_system="confluence",
        acl=STAFF,
        updated_at="2023-12-12T14:00:00",
        version="2024.1",
        effective_from="2024-01-01",
    )
    d.section("1. Hybrid work model").body(
        "Halvorsen follows a hybrid model: teams agree on at least two anchor days per week in the office. "
        "Working from home on the other days needs no separate request.",
        "eligibility",
    )
    d.section("2. Home office set-up").body(
        "New and existing employees can claim a one-time home office stipend of EUR 750 through Spendly for "
        "ergonomic furniture and a second screen. The former monthly broadband allowance was discontinued on "
        "31 December 2023.",
        "stipend",
    )
    d.section("3. Core hours and availability").body(
        "Core collaboration hours are 10:00 to 15:00 in your local time zone. Keep your calendar up to date "
        "and be reachable in chat during core hours.",
        "core",
    )
    d.section("4. Working from another country").body(
        "You may work from another country for up to 30 calendar days per year if you remain within the "
        "European Economic Area or the United Kingdom. Longer stays need approval from HR and Tax because of "
        "social security and permanent establishment risks.",
        "abroad",
    )
    d.items(
        [
            "Notify your manager two weeks in advance",
            "Register the stay in Workday under 'Mobile work'",
            "Carry the A1 certificate when working in the EEA",
        ],
        "abroad_steps",
        "Before working abroad:",
    )


def leave(c: Corpus) -> None:
    for alias, ver, status, start, end, days, carry in (
        ("leave23", "2023.1", "archived", "2023-01-01", "2023-12-31", "26", "10"),
        ("leave24", "2024.1", "current", "2024-01-01", None, "28", "5"),
    ):
        d = c.new(
            alias,
            f"pol-leave-{ver[:4]}",
            f"Leave and Absence Policy ({ver[:4]})",
            doc_type="policy",
            source_system="confluence",
            acl=STAFF,
            updated_at=f"{start}T07:45:00",
            version=ver,
            status=status,
            effective_from=start,
            effective_to=end,
        )
        d.section("1. Annual leave", "annual").body(
            f"Full-time employees are entitled to {days} working days of annual leave per calendar year. "
            "Part-time employees receive a pro-rata entitlement. Leave is requested and approved in Workday.",
            "annual",
        )
        d.body(
            f"Up to {carry} unused days can be carried over into the next year; carried-over days must be "
            "taken by 31 March or they lapse.",
            "carry",
        )
        d.section("2. Sickness absence", "sick").body(
            "If you are ill, inform your manager before 10:00 on the first day. A medical certificate is needed "
            "from the fourth calendar day of absence.",
            "sick",
        )
        d.section("3. Parental leave", "parental").body(
            "Employees with at least six months of service receive 20 weeks of paid parental leave at full salary "
            "for the primary caregiver and 6 weeks for the secondary caregiver, to be taken within 18 months of "
            "the birth or adoption.",
            "parental",
        )
        d.section("4. Sabbatical", "sabbatical").body(
            "After five years of continuous service employees may take an unpaid sabbatical of one to three "
            "months once every five years, subject to business needs.",
            "sabbatical",
        )
        if alias == "leave23":
            d.section("5. Special leave").body(
                "One day of paid special leave is granted for moving house, for your own wedding and for the "
                "birth of a grandchild.",
                "special",
            )


def restricted(c: Corpus) -> None:
    d = c.new(
        "comp",
        "pol-compensation-2024",
        "Compensation Framework 2024",
        doc_type="policy",
        source_system="confluence",
        acl=["hr-confidential"],
        updated_at="2024-02-01T10:00:00",
        version="2024.1",
        effective_from="2024-01-01",
    )
    d.section("1. Salary bands").body(
        "Base salaries are set within bands per career level. Offers above the band midpoint need approval "
        "from the compensation committee.",
        "bands_intro",
    )
    d.table(
        ["Level", "Title", "Band minimum (EUR)", "Midpoint (EUR)", "Band maximum (EUR)"],
        [
            ["L1", "Associate", "42,000", "48,000", "54,000"],
            ["L2", "Professional", "52,000", "60,000", "68,000"],
            ["L3", "Senior Professional", "64,000", "74,000", "84,000"],
            ["L4", "Lead", "78,000", "90,000", "102,000"],
            ["L5", "Principal", "95,000", "110,000", "125,000"],
            ["L6", "Director", "115,000", "135,000", "155,000"],
        ],
        "bands",
        "Salary bands by level",
    )
    d.section("2. Annual bonus").body(
        "The target bonus is 8 percent of base salary for L1 to L3, 12 percent for L4 and L5 and 20 percent for "
        "L6. Payout ranges from 0 to 150 percent of target depending on company and individual results.",
        "bonus",
    )
    d.section("3. Merit review cycle").body(
        "Merit increases are decided in the March review cycle and take effect on 1 April. The 2024 merit budget "
        "is 3.5 percent of payroll.",
        "merit",
    )
    d = c.new(
        "sever",
        "pol-severance",
        "Separation and Severance Guidelines",
        doc_type="policy",
        source_system="confluence",
        acl=["hr-confidential"],
        updated_at="2024-05-14T11:20:00",
        version="2024.2",
        effective_from="2024-05-15",
    )
    d.section("1. Severance formula").body(
        "In a redundancy, severance is calculated as one month of base salary per completed year of service, "
        "with a minimum of three and a maximum of eighteen months.",
        "formula",
    )
    d.section("2. Garden leave and notice").body(
        "Departing employees in sales and engineering can be placed on garden leave for the notice period. "
        "Company laptops and badges are returned on the last working day.",
        "garden",
    )
    d = c.new(
        "proc",
        "pol-procurement",
        "Procurement and Purchasing Policy",
        doc_type="policy",
        source_system="confluence",
        acl=["finance"],
        updated_at="2024-03-03T09:00:00",
        version="3.2",
        effective_from="2024-03-01",
    )
    d.section("1. Purchase orders").body(
        "Every purchase of goods or services from an external vendor needs a purchase order raised in Coupa "
        "before the invoice arrives. Invoices without a matching order are returned to the vendor.",
        "po",
    )
    d.table(
        ["Order value (EUR)", "Approver", "Quotes required"],
        [
            ["up to 1,000", "Cost-centre manager", "none"],
            ["1,000 to 10,000", "Department head", "2"],
            ["10,000 to 100,000", "CFO", "3"],
            ["above 100,000", "CFO and CEO", "3 plus tender"],
        ],
        "po_table",
        "Approval limits",
    )
    d.section("2. Vendor onboarding").body(
        "New vendors are onboarded by Finance Operations after a sanctions screening and a security "
        "questionnaire for any vendor that processes customer data. Onboarding takes about ten business days.",
        "vendor",
    )
    d.section("3. Payment terms").body(
        "Standard payment terms for vendors are net 45 days from the invoice date; early payment discounts are "
        "used whenever they exceed 1 percent.",
        "terms",
    )


def general(c: Corpus) -> None:
    d = c.new(
        "sec",
        "pol-infosec",
        "Information Security Policy",
        doc_type="policy",
        source_system="confluence",
        acl=STAFF,
        updated_at="2024-04-10T13:00:00",
        version="5.0",
        effective_from="2024-04-15",
    )
    d.section("1. Passwords and authentication").body(
        "Passwords must be at least 14 characters long and must not be reused across systems. Multi-factor "
        "authentication with the Okta Verify app is mandatory for email, VPN and every SaaS tool.",
        "passwords",
    )
    d.section("2. Devices").body(
        "Company laptops are encrypted with BitLocker or FileVault and managed by Intune. Never disable the "
        "endpoint protection agent. Lost or stolen devices must be reported to the IT service desk within one "
        "hour.",
        "devices",
    )
    d.section("3. Reporting phishing and incidents").body(
        "Forward suspicious emails with the 'Report phish' button in Outlook. Any suspected security incident "
        "is reported to security@halvorsen.example or by phone on extension 4444, day or night.",
        "phishing",
    )
    d.section("4. Classification of information").items(
        [
            "Public: may be shared freely, e.g. published datasheets",
            "Internal: default for business documents, shared within the company",
            "Confidential: customer data, contracts, HR files; share on a need-to-know basis",
            "Strictly confidential: M&A, salary data, security keys; encrypted and access-logged",
        ],
        "classes",
    )
    d = c.new(
        "inc",
        "pol-incident-response",
        "Incident Response and On-Call Policy",
        doc_type="policy",
        source_system="confluence",
        acl=["eng", "support"],
        updated_at="2024-06-02T16:40:00",
        version="2.3",
        product="ledger-cloud",
        effective_from="2024-06-01",
    )
    d.section("1. Severity levels").table(
        ["Severity", "Definition", "First response", "Status page update"],
        [
            ["SEV1", "Ledger Cloud unavailable or data loss for many customers", "15 minutes", "every 30 minutes"],
            ["SEV2", "Major feature degraded, no workaround", "30 minutes", "every 60 minutes"],
            ["SEV3", "Minor feature degraded, workaround exists", "4 business hours", "not required"],
            ["SEV4", "Cosmetic issue or question", "2 business days", "not required"],
        ],
        "sev_table",
    )
    d.section("2. On-call rotation").body(
        "Each product team runs a weekly on-call rotation starting Monday 09:00 CET. The on-call engineer must "
        "acknowledge a page in PagerDuty within 5 minutes and be able to reach a laptop within 15 minutes. "
        "On-call weeks are compensated with EUR 350 per week plus time in lieu for incidents outside hours.",
        "oncall",
    )
    d.section("3. Postmortems").body(
        "Every SEV1 and SEV2 incident gets a blameless postmortem, published in Confluence within five business "
        "days, with action items tracked in Jira.",
        "postmortem",
    )
    d = c.new(
        "ret",
        "pol-data-retention",
        "Data Retention Schedule",
        doc_type="policy",
        source_system="confluence",
        acl=STAFF,
        updated_at="2024-01-22T10:10:00",
        version="1.4",
        effective_from="2024-02-01",
    )
    d.section("1. Retention periods").body(
        "Records are kept only as long as there is a legal or business reason. When the period ends, the "
        "system owner deletes or anonymises the data within 30 days.",
        "intro",
    )
    d.table(
        ["Record type", "Retention period", "System"],
        [
            ["Customer telemetry (raw sensor readings)", "13 months", "Ledger Cloud"],
            ["Aggregated telemetry", "5 years", "Ledger Cloud"],
            ["Invoices and accounting records", "10 years", "SAP"],
            ["HR personnel files", "6 years after departure", "Workday"],
            ["Support tickets", "3 years after closure", "Zendesk"],
            ["Audit logs", "400 days", "Ledger Cloud"],
        ],
        "ret_table",
        "Retention schedule",
    )
    d = c.new(
        "coc",
        "pol-code-of-conduct",
        "Code of Conduct: Gifts and Hospitality",
        doc_type="policy",
        source_system="confluence",
        acl=STAFF,
        updated_at="2023-09-01T09:00:00",
        version="2.0",
        effective_from="2023-09-01",
    )
    d.section("1. Gifts").body(
        "Employees may accept gifts from business partners worth up to EUR 50 per partner and year. Anything "
        "above that must be declared in the gift register and, where possible, returned politely.",
        "gifts",
    )
    d.section("2. Hospitality").body(
        "Business meals are acceptable when they are occasional and proportionate. Invitations to events with "
        "travel or overnight stays need prior approval from Compliance.",
        "hospitality",
    )
    d = c.new(
        "benus",
        "pol-benefits-us",
        "US Benefits Summary",
        doc_type="policy",
        source_system="confluence",
        acl=STAFF,
        updated_at="2024-01-05T15:00:00",
        version="2024.1",
        region="us",
        effective_from="2024-01-01",
    )
    d.section("1. Retirement plan").body(
        "US employees can join the 401(k) plan from their first day. Halvorsen matches 100 percent of the first "
        "4 percent of salary you contribute; the match vests immediately.",
        "retirement",
    )
    d.section("2. Health insurance").body(
        "Medical, dental and vision plans are offered through Aetna. The company pays 85 percent of the premium "
        "for employees and 70 percent for dependants.",
        "health",
    )


def german(c: Corpus) -> None:
    d = c.new(
        "rkde",
        "pol-reisekosten-de",
        "Reisekostenrichtlinie Halvorsen Messtechnik GmbH",
        doc_type="policy",
        source_system="confluence",
        acl=STAFF,
        updated_at="2024-01-10T08:00:00",
        version="2024.1",
        language="de",
        region="de",
        effective_from="2024-01-01",
    )
    d.section("1. Geltungsbereich").body(
        "Diese Richtlinie gilt für alle Beschäftigten der Halvorsen Messtechnik GmbH in Deutschland bei "
        "Dienstreisen im In- und Ausland.",
        "scope",
    )
    d.section("2. Verpflegungsmehraufwand").body(
        "Für Dienstreisen im Inland wird eine Verpflegungspauschale von 28 Euro pro vollem Kalendertag gezahlt. "
        "Bei einer Abwesenheit von mehr als 8 Stunden sowie für An- und Abreisetage beträgt die Pauschale "
        "14 Euro.",
        "meals",
    )
    d.section("3. Übernachtung").body(
        "Hotelkosten werden bis zu 130 Euro pro Nacht inklusive Frühstück erstattet. Die Buchung erfolgt über "
        "TravelDesk.",
        "hotel",
    )
    d.section("4. Fahrtkosten").body(
        "Bei Nutzung des privaten Pkw wird eine Kilometerpauschale von 0,30 Euro je gefahrenem Kilometer "
        "erstattet. Bahnfahrten erfolgen in der 2. Klasse; ab 4 Stunden Fahrzeit ist die 1. Klasse erlaubt.",
        "car",
    )
    d = c.new(
        "azde",
        "pol-arbeitszeit-de",
        "Arbeitszeitrichtlinie",
        doc_type="policy",
        source_system="confluence",
        acl=STAFF,
        updated_at="2023-11-20T12:00:00",
        version="2023.2",
        language="de",
        region="de",
        effective_from="2024-01-01",
    )
    d.section("1. Gleitzeit").body(
        "Es gilt Gleitzeit mit einer Kernarbeitszeit von 10:00 bis 15:00 Uhr. Die tägliche Arbeitszeit darf "
        "zehn Stunden nicht überschreiten.",
        "flex",
    )
    d.section("2. Überstunden").body(
        "Überstunden werden auf dem Arbeitszeitkonto erfasst. Bis zu 40 Plusstunden können übertragen werden; "
        "darüber hinaus ist ein Freizeitausgleich innerhalb von drei Monaten zu vereinbaren.",
        "overtime",
    )
    d.section("3. Betriebliche Altersvorsorge").body(
        "Die Gesellschaft bezuschusst die Entgeltumwandlung in die betriebliche Altersvorsorge mit 20 Prozent "
        "des umgewandelten Betrags.",
        "pension",
    )


def kestrel(c: Corpus) -> None:
    kw = {"tenant": TENANT_B, "acl": ["kestrel-staff"], "source_system": "sharepoint-kestrel", "region": "us"}
    d = c.new(
        "kleave",
        "kst-pol-leave",
        "Kestrel Freight Time Off Policy",
        doc_type="policy",
        updated_at="2024-01-03T08:00:00",
        version="2024",
        effective_from="2024-01-01",
        **kw,
    )
    d.section("1. Paid time off").body(
        "Kestrel drivers and office staff accrue 20 days of paid time off (PTO) per year, rising to 25 days "
        "after five years. Up to 3 unused days roll over to the next year.",
        "pto",
    )
    d.section("2. Sick time").body(
        "Employees receive 8 paid sick days per year. Drivers must call dispatch at least two hours before "
        "their shift when they are sick.",
        "sick",
    )
    d = c.new(
        "ktravel",
        "kst-pol-travel",
        "Kestrel Freight Travel Reimbursement",
        doc_type="policy",
        updated_at="2024-02-11T08:00:00",
        version="2024",
        effective_from="2024-02-01",
        **kw,
    )
    d.section("1. Lodging").body(
        "Overnight lodging is reimbursed up to USD 140 per night; drivers on long-haul routes use the partner "
        "motels listed on the dispatch board.",
        "hotel",
    )
    d.section("2. Meals").body("Meal per diem for overnight trips is USD 59 per day.", "meals")
    d = c.new(
        "kdriver",
        "kst-pol-driver-safety",
        "Kestrel Driver Safety Policy",
        doc_type="policy",
        updated_at="2024-03-18T08:00:00",
        version="3",
        effective_from="2024-03-15",
        **kw,
    )
    d.section("1. Hours of service").body(
        "Drivers may drive at most 11 hours after 10 consecutive hours off duty and may not drive beyond the "
        "14th hour after coming on duty. Hours are recorded on the electronic logging device (ELD).",
        "hos",
    )
    d.section("2. Pre-trip inspection").items(
        [
            "Check tyre pressure and tread depth",
            "Test brakes, lights and horn",
            "Confirm the BG-200 telematics gateway shows a green status LED",
            "Record defects in the driver vehicle inspection report (DVIR)",
        ],
        "pretrip",
    )
    d.section("3. Accidents").body(
        "After any accident, secure the scene, call 911 if anyone is hurt and then call the Kestrel safety "
        "hotline. Do not admit liability at the scene.",
        "accident",
    )
    d = c.new(
        "kremote",
        "kst-pol-remote",
        "Kestrel Freight Office Remote Work",
        doc_type="policy",
        updated_at="2024-01-15T08:00:00",
        version="2024",
        effective_from="2024-01-15",
        **kw,
    )
    d.section("1. Remote days").body(
        "Office staff at Kestrel may work remotely one day per week. There is no home office stipend; "
        "equipment is issued by Kestrel IT.",
        "days",
    )


def build(c: Corpus) -> None:
    for part in (travel, remote, leave, restricted, general, german, kestrel):
        part(c)
