"""Unit tests of stats.py (tests/test_eval.sh runs them with unittest: no pytest needed)."""

import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import stats  # noqa: E402


class Medians(unittest.TestCase):
    def test_median_and_percentile(self):
        self.assertEqual(stats.median([3, 1, 2]), 2.0)
        self.assertEqual(stats.median([4, 1, 2, 3]), 2.5)
        self.assertIsNone(stats.median([]))
        self.assertAlmostEqual(stats.percentile(range(101), 99), 99.0)


class Bootstrap(unittest.TestCase):
    def test_interval_holds_the_median_and_lies_within_the_values(self):
        v = [10.0, 11.0, 9.5, 10.5, 12.0, 9.0, 10.2]
        lo, hi = stats.bootstrap_ci(v)
        self.assertLessEqual(min(v), lo)
        self.assertLessEqual(lo, stats.median(v))
        self.assertLessEqual(stats.median(v), hi)
        self.assertLessEqual(hi, max(v))
        self.assertLess(lo, hi)

    def test_fixed_seed_gives_the_same_interval(self):
        v = [1.0, 5.0, 2.0, 8.0, 3.0]
        self.assertEqual(stats.bootstrap_ci(v), stats.bootstrap_ci(list(v)))

    def test_more_spread_gives_a_wider_interval(self):
        tight = stats.bootstrap_ci([10, 10.1, 9.9, 10, 10.05, 9.95])
        wide = stats.bootstrap_ci([5, 15, 8, 12, 10, 20])
        self.assertLess(tight[1] - tight[0], wide[1] - wide[0])

    def test_one_value_and_none(self):
        self.assertEqual(stats.bootstrap_ci([4.0]), (4.0, 4.0))
        self.assertIsNone(stats.bootstrap_ci([]))

    def test_summary(self):
        s = stats.summary([1, 2, 3])
        self.assertEqual(s["n"], 3)
        self.assertEqual(s["median"], 2.0)
        self.assertEqual(len(s["ci"]), 2)


class Ratios(unittest.TestCase):
    def test_paired_by_repeat(self):
        r = stats.paired_ratios({1: 2.0, 2: 3.0, 3: 5.0}, {1: 1.0, 3: 2.0, 4: 9.0})
        self.assertEqual(r, [2.0, 2.5])

    def test_zero_reference_is_left_out(self):
        self.assertEqual(stats.paired_ratios({1: 2.0}, {1: 0.0}), [])


class Decisions(unittest.TestCase):
    def test_met_only_with_the_whole_interval_on_the_right_side(self):
        self.assertTrue(stats.met((1.0, 1.19), "<=", 1.2))
        self.assertFalse(stats.met((1.0, 1.21), "<=", 1.2))
        self.assertTrue(stats.met((0.91, 1.5), ">=", 0.9))
        self.assertFalse(stats.met((0.89, 1.5), ">=", 0.9))

    def test_a_median_on_the_right_side_is_not_enough(self):
        v = [1.0, 1.1, 1.15, 1.1, 1.9, 1.05, 1.6]
        self.assertLessEqual(stats.median(v), 1.2)
        ci = stats.bootstrap_ci(v)
        self.assertEqual(stats.decide(ci, "<=", 1.2), "inconclusive")
        self.assertFalse(stats.met(ci, "<=", 1.2))

    def test_verdicts(self):
        self.assertEqual(stats.decide((1.3, 1.5), "<=", 1.2), "missed")
        self.assertEqual(stats.decide((0.5, 0.8), ">=", 0.9), "missed")
        self.assertEqual(stats.decide((1.2, 1.2), "<=", 1.2), "met")
        self.assertEqual(stats.decide(None, "<=", 1.2), "no data")
        with self.assertRaises(ValueError):
            stats.decide((1, 2), "<", 1.2)

    def test_one_repeat_is_no_claim(self):
        self.assertEqual(stats.verdict([1.0], "<=", 1.2), "no claim")
        self.assertEqual(stats.verdict([1.0, 1.1, 1.05], "<=", 1.2), "met")
        self.assertEqual(stats.verdict([], "<=", 1.2), "no data")


if __name__ == "__main__":
    unittest.main()
