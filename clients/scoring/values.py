"""Reading values out of what a person wrote: numbers (in digits or words, with common currency forms), dates
and times (absolute, or relative to the farm clock), and text compared case- and accent-insensitively.

A number is only ever read where it stands alone: the digits of a date, a time, an id, an email or a phone
number are masked first, so `2` is not stated by "Your stay is on 2026-02-24." The farm clock comes from the
servers' instructions in the system prompt ("Now: Monday 13 April 2026, 09:00 UTC (10:00 in Europe/Lisbon).
Time zone: Europe/Lisbon."): a rollout over several servers may see several clocks, and a relative date
("today", "next Monday", "just now") is read against each.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta, tzinfo
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

MONTH_NAMES = [
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
]
WEEKDAYS = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]
MONTH = (
    r"(jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sep(?:t(?:ember)?)?"
    r"|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)"
)
WEEKDAY = r"(mon|tue|tues|wed|thu|thur|thurs|fri|sat|sun)(?:day|nesday|sday|urday|rsday)?"

ISO_DATETIME = re.compile(r"\b(\d{4})-(\d{2})-(\d{2})[T ](\d{2}):(\d{2})(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?")
ISO_DATE = re.compile(r"(?<![\d-])(\d{4})-(\d{2})-(\d{2})(?![\d-])")
MONTH_FIRST = re.compile(rf"\b{MONTH}\.?\s+(\d{{1,2}})(?:st|nd|rd|th)?\b(?:,?\s+(\d{{4}}))?", re.IGNORECASE)
DAY_FIRST = re.compile(rf"\b(\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?{MONTH}\b\.?(?:,?\s+(\d{{4}}))?", re.IGNORECASE)
SLASHED = re.compile(r"\b(\d{1,2})/(\d{1,2})/(\d{4})\b")
CLOCK_TIME = re.compile(r"(?<![\d:])(\d{1,2}):(\d{2})(?::\d{2})?\s*(a\.?m\.?|p\.?m\.?)?(?![\d:])", re.IGNORECASE)
HOUR_TIME = re.compile(r"(?<![:\d])(\d{1,2})\s*(a\.?m\.?|p\.?m\.?)(?!\w)", re.IGNORECASE)
NAMED_TIME = re.compile(r"\b(noon|midday|midnight)\b", re.IGNORECASE)
RELATIVE_DAY = re.compile(r"\b(today|tonight|this (?:morning|afternoon|evening)|yesterday|tomorrow)\b", re.IGNORECASE)
WEEKDAY_REF = re.compile(rf"\b(?:(next|this|last|coming|past)\s+)?{WEEKDAY}\b", re.IGNORECASE)
DAYS_OFFSET = re.compile(r"\b(?:in\s+(\w+)\s+days?|(\w+)\s+days?\s+ago)\b", re.IGNORECASE)
JUST_NOW = re.compile(
    r"\b(just now|right now|a moment ago|moments ago|just a moment ago|a minute ago)\b", re.IGNORECASE
)
# Digits that are part of something else: emails, ids (letters and digits joined: inv_x2, INV-1057, PO-48000),
# digit groups joined by dashes or dots (4410-7007-0005, 1.2.3), phone numbers.
EMAIL = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")
IDENT = re.compile(r"\b(?=[\w-]*\d)(?=[\w-]*[A-Za-z_])[A-Za-z0-9]+(?:[_-][A-Za-z0-9]+)+\b|\b[A-Za-z]+\d[A-Za-z0-9]*\b")
DIGIT_GROUPS = re.compile(r"\+?\d+(?:[-.]\d+){2,}|\+?\d+(?:-\d+)+|\+\d[\d ()-]{6,}\d")
NUMBER_UNIT = re.compile(r"^\d+(?:\.\d+)?-[A-Za-z]+$")  # "30-minute", "2-day": a number, not an id
CURRENCY = r"(?:\$|€|£|usd|eur|gbp|dollars?|euros?|pounds?|bucks)"
NUMBER = re.compile(r"(?<![\w.,/:-])(-?\d{1,3}(?:,\d{3})+|-?\d+)(\.\d+)?(?![\w/:]|[.,]\d|-\d)")
NOTHING = re.compile(
    r"(?:\b(?:none|nothing|zero|no\s+(?!(?:problem|longer|worries|need|doubt|one)\b)[a-z]+)|"
    r"(?:n't|\bnot) (?:have |has |had |see |find |show )?any)\b",
    re.IGNORECASE,
)

SMALL = {
    w: n
    for n, w in enumerate(
        [
            "zero",
            "one",
            "two",
            "three",
            "four",
            "five",
            "six",
            "seven",
            "eight",
            "nine",
            "ten",
            "eleven",
            "twelve",
            "thirteen",
            "fourteen",
            "fifteen",
            "sixteen",
            "seventeen",
            "eighteen",
            "nineteen",
        ]
    )
}
TENS = {
    w: 10 * n for n, w in enumerate(["twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"], 2)
}
SCALES = {"dozen": 12, "hundred": 100, "thousand": 1000, "million": 1_000_000}
NUMBER_WORD = "|".join([*SMALL, *TENS, *SCALES])
WORDS_NUMBER = re.compile(
    rf"\b(?:a\s+(?=dozen|hundred|thousand|million))?(?:{NUMBER_WORD})(?:(?:\s+and\s+|[\s-]+)(?:{NUMBER_WORD}))*\b",
    re.IGNORECASE,
)
AMOUNT_WORDS = rf"(?:{NUMBER_WORD})(?:(?:\s+and\s+|[\s-]+)(?:{NUMBER_WORD}))*"
CENTS = re.compile(
    rf"\b(?P<whole>{AMOUNT_WORDS}|\d+)\s+{CURRENCY}\s+(?:and\s+)?(?P<cents>{AMOUNT_WORDS}|\d+)\s+cents?\b",
    re.IGNORECASE,
)
LESS = re.compile(r"\b(fewer|less|short|below|under|down|lower|missing|minus|negative|deficit)\b", re.IGNORECASE)
CENTS_ONLY = re.compile(rf"\b(?P<cents>{AMOUNT_WORDS}|\d+)\s+cents?\b", re.IGNORECASE)
HOURS = re.compile(
    rf"\b(?P<n>an?|{AMOUNT_WORDS}|\d+(?:\.\d+)?)\s+(?:and\s+a\s+half\s+)?hours?(?:\s+and\s+a\s+half)?\b|"
    r"\bhalf an hour\b",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Clock:
    """One server's frozen clock: now (UTC) and the zone its people live in."""

    now: datetime
    zone: tzinfo = UTC

    @property
    def local(self) -> datetime:
        return self.now.astimezone(self.zone)


NOW_LINE = re.compile(
    r"Now: \w+ (\d{1,2}) (\w+) (\d{4}), (\d{2}):(\d{2}) UTC[^.]*\.(?: Time zone: ([\w/+-]+)\.)?", re.IGNORECASE
)


def clocks_from(text: str) -> list[Clock]:
    """Every farm clock a system prompt states (one per server's instructions), without repeats."""
    clocks: list[Clock] = []
    for day, month, year, hour, minute, zone in NOW_LINE.findall(text):
        if month.lower() not in MONTH_NAMES:
            continue
        now = datetime(int(year), MONTH_NAMES.index(month.lower()) + 1, int(day), int(hour), int(minute), tzinfo=UTC)
        try:
            tz: tzinfo = ZoneInfo(zone) if zone else UTC
        except (ZoneInfoNotFoundError, ValueError):
            tz = UTC
        if Clock(now, tz) not in clocks:
            clocks.append(Clock(now, tz))
    return clocks


def fold(text: str) -> str:
    """Lower case, accents dropped, `_`/`-` as spaces, punctuation gone: how names and labels are compared."""
    text = unicodedata.normalize("NFKD", text)
    text = "".join(ch for ch in text if not unicodedata.combining(ch)).casefold()
    text = re.sub(r"[_\-/]+", " ", text)
    text = re.sub(r"\bcancel(?:l)?(ed|ing|ation)\b", r"cancell\1", text).replace("cancellation", "cancelation")
    return re.sub(r"\s+", " ", re.sub(r"[^\w@$%]+", " ", text)).strip()


def _month(name: str) -> int:
    return next(n for n, m in enumerate(MONTH_NAMES, 1) if m.startswith(name.lower()[:3]))


def _weekday(name: str) -> int:
    return next(n for n, d in enumerate(WEEKDAYS) if d.startswith(name.lower()[:3]))


def _safe_date(year: int, month: int, day: int) -> date | None:
    try:
        return date(year, month, day)
    except ValueError:
        return None


def _word_number(text: str) -> float | None:
    """`forty-five` -> 45, `a hundred and two` -> 102, `two thousand` -> 2000; None when it is not one."""
    total, current, seen, last = 0, 0, False, ""
    for word in re.findall(r"[a-z]+", text.lower()):
        if word in ("and", "a"):
            continue
        if (word in SMALL or word in TENS) and (last == "small" or (last == "tens" and word not in SMALL)):
            return None  # "two three", "twenty thirty": not one number
        if word in SMALL:
            current += SMALL[word]
            last = "small"
        elif word in TENS:
            current += TENS[word]
            last = "tens"
        elif word == "hundred":
            current = max(current, 1) * 100
            last = "scale"
        elif word in SCALES:
            total += max(current, 1) * SCALES[word]
            current = 0
            last = "scale"
        else:
            return None
        seen = True
    return float(total + current) if seen else None


def _to_number(text: str) -> float | None:
    """A number written in digits (`1,200.50`, `$45`) or in words."""
    digits = re.sub(r"[,$€£\s]", "", text)
    try:
        return float(digits)
    except ValueError:
        return _word_number(text)


@dataclass
class Reading:
    """What one text states: its dates, times, moments, and the numbers that stand alone."""

    dates: set[date]
    times: set[tuple[int, int]]
    now: bool  # "just now"
    numbers: list[float]
    hours: list[float]  # durations said in hours ("an hour and a half" -> 1.5)
    less: bool = False  # says "fewer", "less", "short", ...: a negative difference said as a size


def _mask(text: str, spans: Iterable[tuple[int, int]]) -> str:
    chars = list(text)
    for start, end in spans:
        chars[start:end] = " " * (end - start)
    return "".join(chars)


def _relative_dates(text: str, clocks: Sequence[Clock]) -> set[date]:
    found: set[date] = set()
    for clock in clocks:
        today = clock.local.date()
        for (word,) in [(m.group(1).lower(),) for m in RELATIVE_DAY.finditer(text)]:
            shift = {"yesterday": -1, "tomorrow": 1}.get(word, 0)
            found.add(today + timedelta(days=shift))
        for m in WEEKDAY_REF.finditer(text):
            which, target = (m.group(1) or "").lower(), _weekday(m.group(2))
            ahead = (target - today.weekday()) % 7
            if which in ("next", "coming"):
                found |= {today + timedelta(days=ahead or 7), today + timedelta(days=ahead + 7)}
            elif which in ("last", "past"):
                found.add(today - timedelta(days=(today.weekday() - target) % 7 or 7))
            else:  # "this Monday", "on Monday": the nearest one, either way
                found |= {today + timedelta(days=ahead), today - timedelta(days=(today.weekday() - target) % 7)}
        for m in DAYS_OFFSET.finditer(text):
            count = _to_number(m.group(1) or m.group(2) or "")
            if count is not None and count == int(count):
                found.add(today + timedelta(days=int(count) if m.group(1) else -int(count)))
    return found


def read(text: str, clocks: Sequence[Clock] = (), default_year: int | None = None) -> Reading:
    """Everything `text` states, dates and times first, then the numbers left standing alone."""
    dates: set[date] = set()
    times: set[tuple[int, int]] = set()
    masked: list[tuple[int, int]] = []
    years = sorted({c.local.year for c in clocks} | ({default_year} if default_year else set()))
    for m in ISO_DATETIME.finditer(text):
        times.add((int(m.group(4)), int(m.group(5))))
        masked.append(m.span())
    for m in ISO_DATE.finditer(text):
        d = _safe_date(int(m.group(1)), int(m.group(2)), int(m.group(3)))
        if d:
            dates.add(d)
        masked.append(m.span())
    for pattern, order in ((MONTH_FIRST, "md"), (DAY_FIRST, "dm")):
        for m in pattern.finditer(text):
            month, day = (m.group(1), m.group(2)) if order == "md" else (m.group(2), m.group(1))
            for year in [int(m.group(3))] if m.group(3) else years:
                d = _safe_date(year, _month(month), int(day))
                if d:
                    dates.add(d)
            masked.append(m.span())
    for m in SLASHED.finditer(text):  # 04/13/2026 or 13/04/2026: both readings where both are dates
        first, second, year = int(m.group(1)), int(m.group(2)), int(m.group(3))
        dates |= {d for d in (_safe_date(year, first, second), _safe_date(year, second, first)) if d}
        masked.append(m.span())
    dates |= _relative_dates(text, clocks)
    for m in CLOCK_TIME.finditer(text):
        hour, minute, half = int(m.group(1)), int(m.group(2)), (m.group(3) or "").lower()
        times.add((hour % 12 + (12 if half.startswith("p") else 0) if half else hour, minute))
        masked.append(m.span())
    for m in HOUR_TIME.finditer(_mask(text, masked)):
        hour, half = int(m.group(1)), m.group(2).lower()
        times.add((hour % 12 + (12 if half.startswith("p") else 0), 0))
        masked.append(m.span())
    for m in NAMED_TIME.finditer(text):
        times.add((0, 0) if m.group(1).lower() == "midnight" else (12, 0))
    for pattern in (EMAIL, DIGIT_GROUPS, IDENT):
        rest = _mask(text, masked)
        masked += [m.span() for m in pattern.finditer(rest) if not NUMBER_UNIT.match(m.group(0))]
    rest = _mask(text, masked)
    return Reading(
        dates=dates,
        times=times,
        now=bool(JUST_NOW.search(text)),
        numbers=_numbers(rest),
        hours=_hours(rest),
        less=bool(LESS.search(text)),
    )


def _hours(text: str) -> list[float]:
    found = []
    for m in HOURS.finditer(text):
        if m.group("n") is None:
            found.append(0.5)  # half an hour
            continue
        count = 1.0 if m.group("n").lower() in ("a", "an") else _to_number(m.group("n"))
        if count is not None:
            found.append(count + (0.5 if "half" in m.group(0).lower() else 0.0))
    return found


def _numbers(text: str) -> list[float]:
    """Standalone numbers: digits (currency signs and codes around them are fine), and numbers in words
    (`forty-five dollars and seventy-four cents` -> 45.74)."""
    values: list[float] = []
    used: list[tuple[int, int]] = []
    for m in CENTS.finditer(text):
        whole, cents = _to_number(m.group("whole")), _to_number(m.group("cents"))
        if whole is not None and cents is not None and cents < 100:
            values.append(round(whole + cents / 100, 2))
            used.append(m.span())
    for m in CENTS_ONLY.finditer(_mask(text, used)):
        cents = _to_number(m.group("cents"))
        if cents is not None:
            values.append(round(cents / 100, 2))
            used.append(m.span())
    rest = _mask(text, used)
    values += [float(m.group(1).replace(",", "") + (m.group(2) or "")) for m in NUMBER.finditer(rest)]
    for m in WORDS_NUMBER.finditer(rest):
        value = _word_number(m.group(0))
        if value is not None:
            values.append(value)
        else:  # "two and three" is two numbers
            values += [v for w in re.findall(r"[a-z]+", m.group(0).lower()) if (v := _word_number(w)) is not None]
    if NOTHING.search(rest):
        values.append(0.0)
    return values


def parse_moment(raw: str) -> tuple[datetime | date, bool] | None:
    """A value that is a date (`2026-03-02`) or a moment (`2026-03-02T10:00:00Z`): (it, has a time)."""
    if not re.match(r"^\d{4}-\d{2}-\d{2}", raw):
        return None
    try:
        moment = datetime.fromisoformat(raw)
    except ValueError:
        return None
    if "T" in raw or " " in raw:
        return (moment if moment.tzinfo else moment.replace(tzinfo=UTC)), True
    return moment.date(), False


def number_value(raw: str) -> float | None:
    """A value that is a number: `95`, `1,200.50`, `$45.74`, `45.74 USD`."""
    text = re.sub(rf"^\s*{CURRENCY}\s*|\s*{CURRENCY}\s*$", "", raw.strip(), flags=re.IGNORECASE)
    if not re.fullmatch(r"-?(\d{1,3}(,\d{3})+|\d+)(\.\d+)?", text):
        return None
    return float(text.replace(",", ""))


def moment_stated(moment: datetime | date, has_time: bool, reading: Reading, clocks: Sequence[Clock]) -> bool:
    """Is the date (and time) stated: in UTC or in a clock's own zone, absolutely or relative to the clock."""
    if not isinstance(moment, datetime):
        return moment in reading.dates
    zones = [UTC, *(c.zone for c in clocks)]
    if reading.now and any(abs((moment - c.now).total_seconds()) <= 120 for c in clocks):
        return True
    for zone in zones:
        local = moment.astimezone(zone)
        if local.date() in reading.dates and (not has_time or (local.hour, local.minute) in reading.times):
            return True
    return False


def number_stated(target: float, reading: Reading, minutes: bool = False) -> bool:
    """The number is stated (with `minutes`, a duration in minutes also counts when said in hours; a negative
    one also as its size with a word for less: "4 fewer units")."""
    if any(math.isclose(target, found, abs_tol=0.005) for found in reading.numbers):
        return True
    if target < 0 and reading.less and any(math.isclose(-target, found, abs_tol=0.005) for found in reading.numbers):
        return True
    return minutes and any(math.isclose(target, hours * 60, abs_tol=0.005) for hours in reading.hours)
