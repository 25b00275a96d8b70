"""The results a run leaves: records and the summary document with its schema and summary.csv
(records), several results files merged into one (merge), two runs judged against each other
(compare) and the outputs of all implementations compared pairwise (crosscheck)."""
