import { DynamoDBClient } from "@aws-sdk/client-dynamodb";

/**
 * A DynamoDB client configured the standard AWS way: region, credentials and endpoint come from
 * the environment (AWS_REGION, AWS_PROFILE, AWS_ENDPOINT_URL_DYNAMODB, instance roles, …).
 */
export function createDynamoClient(): DynamoDBClient {
  return new DynamoDBClient({});
}
