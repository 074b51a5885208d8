"""A multi-session conversation between two friends, written for `engramdb demo`.

Four sessions over two months; facts change over time (a move, a new job) so the demo can show
what is current, what was true at a date, and search across sessions. Each turn is
(speaker, text); each session has a start time. The demo stores a turn as "<speaker>: <text>"
(as a chat log reads: a question about "Sam's manager" finds what Sam said).
"""

from __future__ import annotations

from datetime import datetime, timezone

SESSIONS: list[tuple[datetime, list[tuple[str, str]]]] = [
    (
        datetime(2025, 3, 2, 18, 5, tzinfo=timezone.utc),
        [
            ("Maya", "Hey Sam! I finally signed the lease, I'm moving to Porto next month."),
            ("Sam", "That's huge! Are you taking the cat with you?"),
            ("Maya", "Of course, my cat Biscuit comes everywhere with me."),
            ("Sam", "How's the job hunt going?"),
            ("Maya", "I have an interview at a bakery near the river on Friday."),
            ("Sam", "You always said you wanted to bake for a living."),
            ("Maya", "Sourdough is my thing. I've been feeding the same starter for six years."),
            ("Sam", "I started taking Portuguese lessons on Tuesdays, by the way."),
            ("Maya", "Obrigada! I'll need you to translate the lease for me."),
            ("Sam", "My sister Lena is visiting in April, she wants to meet you."),
        ],
    ),
    (
        datetime(2025, 3, 20, 9, 30, tzinfo=timezone.utc),
        [
            ("Maya", "I got the bakery job! I start work on the first of April."),
            ("Sam", "Congratulations! What will you be making?"),
            ("Maya", "Mostly pastéis de nata at first, then bread once they trust me."),
            ("Sam", "Biscuit must be happy with all the boxes around."),
            ("Maya", "She's sleeping in a moving box right now, actually."),
            ("Sam", "I ran a half marathon on Sunday, 1 hour 52 minutes."),
            ("Maya", "That's faster than last year! Your knee is better then?"),
            ("Sam", "The physio exercises helped a lot, no pain at all."),
            ("Maya", "We should hike the Peneda-Gerês trails when you visit."),
            ("Sam", "Deal. Lena loves hiking too."),
        ],
    ),
    (
        datetime(2025, 4, 14, 20, 0, tzinfo=timezone.utc),
        [
            ("Sam", "How is Porto treating you?"),
            ("Maya", "I love it. The apartment gets sun all afternoon and I can see the bridge."),
            ("Sam", "And the bakery?"),
            ("Maya", "Long hours, I start at 4 am. The owner, Dona Rosa, is strict but kind."),
            ("Sam", "Lena arrived yesterday, she says hi."),
            ("Maya", "Bring her to the bakery on Saturday, I'll save you two natas."),
            ("Sam", "I switched teams at work, I'm on the mobile app now."),
            ("Maya", "Is that the project with the new manager you mentioned?"),
            ("Sam", "Yes, my new manager is Priya. She's great."),
            ("Maya", "Biscuit found a sunny window to sleep in all day."),
        ],
    ),
    (
        datetime(2025, 5, 3, 11, 15, tzinfo=timezone.utc),
        [
            ("Maya", "Big news: I'm leaving the bakery to work at my own sourdough stall in the Bolhão market."),
            ("Sam", "Wow! When?"),
            ("Maya", "June first. Dona Rosa is lending me her old oven."),
            ("Sam", "I'll design you a logo. Something with a cat and a loaf?"),
            ("Maya", "Yes! Biscuit deserves to be famous."),
            ("Sam", "Lena flew home on Wednesday; she wants to come back for the opening."),
            ("Maya", "Tell her the first loaf is hers."),
            ("Sam", "I signed up for the Lisbon marathon in October."),
            ("Maya", "You'll need a new pair of running shoes then."),
            ("Sam", "Already ordered, bright orange ones."),
        ],
    ),
]

# each question with the turn that answers it now (session k, turn i -> id "s<k>-t<i>")
QUESTIONS: list[tuple[str, str]] = [
    ("Where does Maya work now?", "s4-t0"),
    ("What is the name of Maya's cat?", "s1-t2"),
    ("When is Sam's sister visiting?", "s1-t9"),
    ("What time did Sam run the half marathon in?", "s2-t5"),
    ("Who is Sam's new manager?", "s3-t8"),
]
