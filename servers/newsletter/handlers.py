"""Custom behaviour of the newsletter service (copied into servers/newsletter/ by the factory)."""

from envfarm.servers.runtime.database import Database


def campaign_report(db: Database, campaign_id: str) -> dict:
    """Engagement counts of a sent campaign; rates are over delivered (not bounced) emails."""
    campaign = db.require("campaigns", campaign_id)
    counts = dict.fromkeys(("delivered", "opened", "clicked", "bounced"), 0)
    for row in db.all("SELECT status, count(*) AS n FROM sends WHERE campaign_id = ? GROUP BY status", (campaign_id,)):
        counts[row["status"]] = row["n"]
    recipients = sum(counts.values())
    delivered = recipients - counts["bounced"]
    opened = counts["opened"] + counts["clicked"]
    unsubscribes = db.scalar("SELECT count(*) FROM unsubscribes WHERE campaign_id = ?", (campaign_id,))
    return {
        "campaign_id": campaign_id,
        "subject": campaign["subject"],
        "recipients": recipients,
        "bounced": counts["bounced"],
        "opened": opened,
        "clicked": counts["clicked"],
        "open_rate": round(opened / delivered, 3) if delivered else 0.0,
        "click_rate": round(counts["clicked"] / delivered, 3) if delivered else 0.0,
        "unsubscribes": unsubscribes,
    }


def subscribe(
    db: Database,
    list_id: str,
    email: str,
    full_name: str | None = None,
    consent_confirmed: bool = False,
    source: str = "manual",
) -> dict:
    """Find or create the subscriber, then add a subscription or reactivate the one they left
    (the rules have already required consent for that)."""
    address = email.strip().lower()
    subscriber = db.one("SELECT * FROM subscribers WHERE email = ?", (address,))
    if subscriber is None:
        if not full_name:
            db.reject(f"{address} is a new subscriber; give their full_name too.")
        subscriber_id = db.next_id("subscribers")
        db.insert(
            "subscribers",
            {"subscriber_id": subscriber_id, "email": address, "full_name": full_name, "created_at": db.now},
        )
    else:
        subscriber_id = subscriber["subscriber_id"]
    previous = db.one(
        "SELECT subscription_id FROM subscriptions WHERE list_id = ? AND subscriber_id = ?", (list_id, subscriber_id)
    )
    if previous is not None:
        subscription_id = previous["subscription_id"]
        db.execute(
            "UPDATE subscriptions SET status = 'subscribed', source = ?, subscribed_at = ?, unsubscribed_at = NULL"
            " WHERE subscription_id = ?",
            (source, db.now, subscription_id),
        )
    else:
        subscription_id = db.next_id("subscriptions")
        db.insert(
            "subscriptions",
            {
                "subscription_id": subscription_id,
                "list_id": list_id,
                "subscriber_id": subscriber_id,
                "status": "subscribed",
                "source": source,
                "subscribed_at": db.now,
            },
        )
    return db.require("subscriptions", subscription_id)


def unsubscribe(db: Database, subscription_id: str, reason: str, campaign_id: str | None = None) -> dict:
    """End the subscription and keep a record of why, for consent checks and campaign reports."""
    subscription = db.require("subscriptions", subscription_id)
    db.execute(
        "UPDATE subscriptions SET status = 'unsubscribed', unsubscribed_at = ? WHERE subscription_id = ?",
        (db.now, subscription_id),
    )
    unsubscribe_id = db.next_id("unsubscribes")
    db.insert(
        "unsubscribes",
        {
            "unsubscribe_id": unsubscribe_id,
            "subscription_id": subscription_id,
            "list_id": subscription["list_id"],
            "subscriber_id": subscription["subscriber_id"],
            "campaign_id": campaign_id,
            "reason": reason,
            "created_at": db.now,
        },
    )
    return db.require("unsubscribes", unsubscribe_id)


def send_campaign(db: Database, campaign_id: str) -> dict:
    """One send per current subscriber of the list, then the campaign is marked sent with its count."""
    campaign = db.require("campaigns", campaign_id)
    recipients = db.all(
        "SELECT subscriber_id FROM subscriptions WHERE list_id = ? AND status = 'subscribed' ORDER BY rowid",
        (campaign["list_id"],),
    )
    for row in recipients:
        db.insert(
            "sends",
            {
                "send_id": db.next_id("sends"),
                "campaign_id": campaign_id,
                "subscriber_id": row["subscriber_id"],
                "status": "delivered",
                "sent_at": db.now,
            },
        )
    db.execute(
        "UPDATE campaigns SET status = 'sent', sent_at = ?, recipient_count = ? WHERE campaign_id = ?",
        (db.now, len(recipients), campaign_id),
    )
    return db.require("campaigns", campaign_id)
