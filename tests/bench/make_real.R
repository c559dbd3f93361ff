# Real public data sets for measuring cfl auto on data nobody tuned it on:
#
#     Rscript tests/bench/make_real.R DIR [b]
#
# writes DIR/real_NAME.csv (target last, header, NA as an empty cell,
# factors as their labels) from R's mlbench and MASS packages (Debian:
# apt-get install r-base-core r-cran-mlbench r-cran-mass).  The panel was
# chosen before any figure of cfl on it: mlbench's UCI classification and
# regression sets of 100 to 1,000 rows (Ozone's rows without a target
# dropped) and MASS's crabs and cpus; MASS's copies of the same sets
# (biopsy, Boston, fgl, Pima) left out; id columns and columns that give
# the target away dropped.  Not downloaded: the packages carry the data.
#
# With b it writes a second panel, DIR/realb_NAME.csv, chosen in session
# 26 before any figure of cfl on it, to check what was decided on the
# first: mlbench's Vowel, DNA and Satellite (990 to 6,435 rows), MASS's
# birthwt, bacteria, synth.tr, Cars93, nlschools and quine, and R's own
# Titanic (one row a person), infert, quakes, airquality and ChickWeight;
# 0/1 targets written as labels, ids and give-away columns dropped;
# Cars93's Cylinders (a factor: 3 to 8, and "rotary") written as words
# ("cyl4"), since a column of numbers with one word in it is an error to
# cfl (it names the cell and the fix; auto then runs on nothing).
suppressMessages({ library(mlbench); library(MASS) })
args <- commandArgs(trailingOnly = TRUE)
if (!length(args) %in% 1:2 || (length(args) == 2 && args[2] != "b"))
  stop("usage: Rscript make_real.R DIR [b]")
out <- args[1]
prefix <- if (length(args) == 2) "realb_" else "real_"
dir.create(out, showWarnings = FALSE, recursive = TRUE)
put <- function(name, df, target, drop = character(0), label = FALSE) {
  df <- as.data.frame(df)[, setdiff(names(df), drop), drop = FALSE]
  if (label) df[[target]] <- ifelse(is.na(df[[target]]), NA, paste0("c", df[[target]]))
  df <- df[!is.na(df[[target]]), , drop = FALSE]
  df <- df[, c(setdiff(names(df), target), target), drop = FALSE]
  for (v in names(df)) if (is.factor(df[[v]])) df[[v]] <- as.character(df[[v]])
  write.csv(df, file.path(out, paste0(prefix, name, ".csv")), row.names = FALSE,
            na = "", quote = TRUE)
  cat(sprintf("%s%s: %d rows, %d columns, target %s\n", prefix, name, nrow(df), ncol(df) - 1, target))
}
e <- environment()
if (prefix == "realb_") {
  data(Vowel, DNA, Satellite, package = "mlbench", envir = e)
  data(birthwt, bacteria, synth.tr, Cars93, nlschools, quine, package = "MASS", envir = e)
  data(Titanic, infert, quakes, airquality, ChickWeight, package = "datasets", envir = e)
  tt <- as.data.frame(Titanic)
  # classification
  put("vowel", Vowel, "Class")
  put("dna", DNA, "Class")
  put("satellite", Satellite, "classes")
  put("birthwt", birthwt, "low", "bwt", label = TRUE)
  put("bacteria", bacteria, "y", "ID")
  put("synth", synth.tr, "yc", label = TRUE)
  put("titanic", tt[rep(seq_len(nrow(tt)), tt$Freq), ], "Survived", "Freq")
  put("infert", infert, "case", c("stratum", "pooled.stratum"), label = TRUE)
  # regression
  put("quakes", quakes, "mag")
  put("airquality", airquality, "Ozone")
  Cars93$Cylinders <- paste0("cyl", Cars93$Cylinders)
  put("cars93", Cars93, "Price", c("Manufacturer", "Model", "Make", "Min.Price", "Max.Price"))
  put("chickweight", ChickWeight, "weight", "Chick")
  put("nlschools", nlschools, "lang", "class")
  put("quine", quine, "Days")
  quit(save = "no")
}
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
