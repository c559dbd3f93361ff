# Real public data sets for measuring cfl auto on data nobody tuned it on:
#
#     Rscript tests/bench/make_real.R DIR
#
# writes DIR/real_NAME.csv (target last, header, NA as an empty cell,
# factors as their labels) from R's mlbench and MASS packages (Debian:
# apt-get install r-base-core r-cran-mlbench r-cran-mass).  The panel was
# chosen before any figure of cfl on it: mlbench's UCI classification and
# regression sets of 100 to 1,000 rows (Ozone's rows without a target
# dropped) and MASS's crabs and cpus; MASS's copies of the same sets
# (biopsy, Boston, fgl, Pima) left out; id columns and columns that give
# the target away dropped.  Not downloaded: the packages carry the data.
suppressMessages({ library(mlbench); library(MASS) })
args <- commandArgs(trailingOnly = TRUE)
if (length(args) != 1) stop("usage: Rscript make_real.R DIR")
out <- args[1]
dir.create(out, showWarnings = FALSE, recursive = TRUE)
put <- function(name, df, target, drop = character(0)) {
  df <- df[, setdiff(names(df), drop), drop = FALSE]
  df <- df[!is.na(df[[target]]), , drop = FALSE]
  df <- df[, c(setdiff(names(df), target), target), drop = FALSE]
  for (v in names(df)) if (is.factor(df[[v]])) df[[v]] <- as.character(df[[v]])
  write.csv(df, file.path(out, paste0("real_", name, ".csv")), row.names = FALSE,
            na = "", quote = TRUE)
  cat(sprintf("real_%s: %d rows, %d columns, target %s\n", name, nrow(df), ncol(df) - 1, target))
}
e <- environment()
data(Sonar, Ionosphere, Glass, BreastCancer, HouseVotes84, PimaIndiansDiabetes2, Vehicle,
     Soybean, Zoo, BostonHousing, Servo, Ozone, package = "mlbench", envir = e)
data(crabs, cpus, package = "MASS", envir = e)
# classification
put("sonar", Sonar, "Class")
put("ionosphere", Ionosphere, "Class")
put("glass", Glass, "Type")
put("breast_cancer_wisc", BreastCancer, "Class", "Id")
put("house_votes", HouseVotes84, "Class")
put("pima", PimaIndiansDiabetes2, "diabetes")
put("vehicle", Vehicle, "Class")
put("soybean", Soybean, "Class")
put("zoo", Zoo, "type")
put("crabs", crabs, "sp", "index")
# regression
put("boston", BostonHousing, "medv")
put("servo", Servo, "Class")
put("ozone", Ozone, "V4")
put("cpus", cpus, "perf", c("name", "estperf"))
